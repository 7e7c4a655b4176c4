import { type Address, createPublicClient, createWalletClient, defineChain, type Hex, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { localDataDir, partnerHeaders, readLocalJson } from "./local-json.js";

// `npm run refund -- <refundId>`: sends a `ready` refund of the local stack (local or
// fork mode) as the shop would: the exact `instructions.transaction` of the refund, from
// its payment address, whose key the local stack keeps in `<data dir>/local-secrets.json`.
// The service then proves the refund from the index, as for any wallet. Both chains are
// Anvil: a payment address without ETH for gas is given some (`anvil_setBalance`).

const refundId = process.argv.slice(2).find((arg) => arg !== "--");
if (refundId === undefined || !/^[A-Za-z0-9_-]{1,100}$/.test(refundId)) {
  console.error("usage: npm run refund -- <refundId>");
  process.exit(2);
}
const local = readLocalJson();
const response = await fetch(`${local.baseUrl}/v1/refunds/${encodeURIComponent(refundId)}`, { headers: partnerHeaders(local) });
const refund = (await response.json()) as {
  status?: string;
  code?: string;
  detail?: string;
  instructions: { from: string; transaction: { to: string; data: string; chainId: number } } | null;
};
if (!response.ok) {
  console.error(`refused (${response.status}): ${refund.code}: ${refund.detail}`);
  process.exit(1);
}
if (refund.status !== "ready" || refund.instructions === null) {
  console.error(`refund ${refundId} is ${refund.status}: only a ready refund (its address set) can be sent`);
  process.exit(1);
}
const { from, transaction } = refund.instructions;
const secrets = loadOrCreateLocalSecrets(localDataDir());
const key = secrets.paymentPrivateKeys.find(
  (candidate) => privateKeyToAccount(candidate).address.toLowerCase() === from.toLowerCase(),
);
if (key === undefined) {
  console.error(`the key of ${from} is not among the local payment addresses of ${localDataDir()}`);
  process.exit(1);
}
const account = privateKeyToAccount(key as Hex);
const chain = defineChain({
  id: transaction.chainId,
  name: local.network,
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [local.rpcUrl] } },
});
const client = createPublicClient({ chain, transport: http(local.rpcUrl) });
if ((await client.getBalance({ address: account.address })) < parseEther("0.01")) {
  await client.request({ method: "anvil_setBalance" as never, params: [account.address, "0x8ac7230489e80000"] as never });
}
const wallet = createWalletClient({ account, chain, transport: http(local.rpcUrl) });
const hash = await wallet.sendTransaction({ to: transaction.to as Address, data: transaction.data as Hex });
const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
if (receipt.status !== "success") {
  console.error(`the transfer reverted: ${hash}`);
  process.exit(1);
}
console.log(`sent refund ${refundId} from ${account.address}: ${hash}`);
