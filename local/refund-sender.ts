import { type Address, createPublicClient, createWalletClient, defineChain, type Hex, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { loadOrCreateLocalSecrets } from "./local-secrets.js";
import type { LocalJson } from "./local-stack.js";

/** Why a refund of the local stack was not sent: shown to the developer as it is. */
export class RefundNotSent extends Error {}

/**
 * Sends a `ready` refund of the local stack (local or fork mode) as the shop would: the
 * exact `instructions.transaction` of the refund, from its payment address, whose key
 * the local stack keeps in `<dataDir>/local-secrets.json`. Both chains are Anvil: a
 * payment address without ETH for gas is given some (`anvil_setBalance`). Used by
 * `npm run refund` and by the `refund` scenario of `npm run simulate`.
 */
export async function sendReadyRefund(params: { local: LocalJson; dataDir: string; refundId: string }) {
  const { local, refundId } = params;
  const response = await fetch(`${local.baseUrl}/v1/refunds/${encodeURIComponent(refundId)}`, {
    headers: { Authorization: `Bearer ${local.partner.apiKey}` },
  });
  const refund = (await response.json()) as {
    status?: string;
    code?: string;
    detail?: string;
    instructions: { from: string; transaction: { to: string; data: string; chainId: number } } | null;
  };
  if (!response.ok) throw new RefundNotSent(`refused (${response.status}): ${refund.code}: ${refund.detail}`);
  if (refund.status !== "ready" || refund.instructions === null) {
    throw new RefundNotSent(`refund ${refundId} is ${refund.status}: only a ready refund (its address set) can be sent`);
  }
  const { from, transaction } = refund.instructions;
  const secrets = loadOrCreateLocalSecrets(params.dataDir);
  const key = secrets.paymentPrivateKeys.find(
    (candidate) => privateKeyToAccount(candidate).address.toLowerCase() === from.toLowerCase(),
  );
  if (key === undefined)
    throw new RefundNotSent(`the key of ${from} is not among the local payment addresses of ${params.dataDir}`);
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
  if (receipt.status !== "success") throw new RefundNotSent(`the transfer reverted: ${hash}`);
  return { hash, from: account.address };
}
