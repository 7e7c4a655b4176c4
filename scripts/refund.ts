import { localDataDir, partnerHeaders, readLocalJson } from "./local-json.js";

// `npm run refund -- <refundId>`: sends a `ready` refund of the local stack (local or
// fork mode) as the shop would: the exact `instructions.transaction` of the refund,
// from its payment address. It asks the service's local-only route
// `POST /v1/refunds/<id>/test-send`, the same domain function as the console's "Send
// with the test account" (api/refunds/test-account-send.ts). The service then proves
// the refund from the index, as for any wallet.

const refundId = process.argv.slice(2).find((arg) => arg !== "--");
if (refundId === undefined || !/^[A-Za-z0-9_-]{1,100}$/.test(refundId)) {
  console.error("usage: npm run refund -- <refundId>");
  process.exit(2);
}
const local = readLocalJson();
const response = await fetch(`${local.baseUrl}/v1/refunds/${encodeURIComponent(refundId)}/test-send`, {
  method: "POST",
  headers: partnerHeaders(local),
  body: "{}",
});
const answer = (await response.json()) as {
  transactionHash?: string;
  refund?: { instructions: { from: string } | null };
  code?: string;
  detail?: string;
  refundStatus?: string;
};
if (!response.ok) {
  if (answer.code === "refund_not_ready") {
    console.error(
      `refund ${refundId} is ${answer.refundStatus}: only a ready refund (its address set) can be sent (${answer.detail})`,
    );
  } else {
    console.error(`refused (${response.status}) by the stack of ${localDataDir()}: ${answer.code}: ${answer.detail}`);
  }
  process.exit(1);
}
console.log(`sent refund ${refundId} from ${answer.refund?.instructions?.from}: ${answer.transactionHash}`);
