import { RefundNotSent, sendReadyRefund } from "../local/refund-sender.js";
import { localDataDir, readLocalJson } from "./local-json.js";

// `npm run refund -- <refundId>`: sends a `ready` refund of the local stack (local or
// fork mode) as the shop would: the exact `instructions.transaction` of the refund, from
// its payment address, whose key the local stack keeps in `<data dir>/local-secrets.json`.
// The service then proves the refund from the index, as for any wallet.

const refundId = process.argv.slice(2).find((arg) => arg !== "--");
if (refundId === undefined || !/^[A-Za-z0-9_-]{1,100}$/.test(refundId)) {
  console.error("usage: npm run refund -- <refundId>");
  process.exit(2);
}
try {
  const { hash, from } = await sendReadyRefund({ local: readLocalJson(), dataDir: localDataDir(), refundId });
  console.log(`sent refund ${refundId} from ${from}: ${hash}`);
} catch (error) {
  if (!(error instanceof RefundNotSent)) throw error;
  console.error(error.message);
  process.exit(1);
}
