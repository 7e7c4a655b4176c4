import type { Address, Hex, PublicClient } from "viem";
import { parseEther } from "viem";
import type { AppContext } from "../app-context.js";
import { isAnvilNode } from "../config/anvil-node.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { ProblemError } from "../http/problem.js";
import { claimTestSend, releaseTestSend } from "./refund-record.js";
import { partnerRefund, refundInstructions, viewRefund } from "./refunds.js";

/**
 * "Send with the test account" (SPEC 15, local and fork mode only; docs/refunds.md):
 * the refund's exact `instructions.transaction` is sent from its payment address, as
 * the shop's wallet would send it. The node is an Anvil (the local chain, or the fork
 * of Base that `FORK_URL=… npm start` runs), which sends from any address it is told
 * to impersonate: no key of the payment address is needed, and the same code serves
 * the console's button, the route and `npm run refund -- <id>`. The service then
 * proves the refund from the index, exactly as for any wallet: this function never
 * moves a refund. It sends a refund once (`refund_already_sent` after), like the
 * relayed send: a claim on the refund's row, taken before anything reaches the node,
 * makes concurrent requests (a double click, a script beside the console, another
 * process) send one transfer.
 */

export type RefundTransaction = { from: Address; to: Address; data: Hex };

/** One impersonated send at a time per process: a stop of one must not end another's impersonation. */
let queue: Promise<unknown> = Promise.resolve();

const localModeOnly = (detail: string) =>
  new ProblemError({
    code: "local_mode_only",
    detail: `${detail} Send the refund from the payment address's wallet with its instructions instead.`,
  });

/** The node took the transaction and its outcome is unknown: it may still move the money. */
class OutcomeUnknown extends Error {}

/**
 * Sends `transaction` from its `from` on an Anvil node and waits for the receipt:
 * refuses (`local_mode_only`) any other node, gives the sender ETH for gas when it
 * has too little, and fails when the transfer reverts.
 */
export async function sendFromAnvilAccount(client: PublicClient, transaction: RefundTransaction): Promise<Hex> {
  const version = await client.request({ method: "web3_clientVersion" }).catch(() => "");
  if (!String(version).toLowerCase().startsWith("anvil")) throw localModeOnly("This network's node is not a local Anvil.");
  const request = client.request as (args: { method: string; params: unknown[] }) => Promise<unknown>;
  const send = async () => {
    if ((await client.getBalance({ address: transaction.from })) < parseEther("0.01")) {
      await request({ method: "anvil_setBalance", params: [transaction.from, "0x8ac7230489e80000"] });
    }
    await request({ method: "anvil_impersonateAccount", params: [transaction.from] });
    try {
      return (await request({
        method: "eth_sendTransaction",
        params: [{ from: transaction.from, to: transaction.to, data: transaction.data }],
      })) as Hex;
    } finally {
      await request({ method: "anvil_stopImpersonatingAccount", params: [transaction.from] });
    }
  };
  const sent = queue.then(send, send);
  queue = sent.catch(() => undefined);
  const hash = await sent;
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 }).catch((error: unknown) => {
    throw new OutcomeUnknown(`the refund's transfer ${hash} was sent; its receipt could not be read`, { cause: error });
  });
  if (receipt.status !== "success") throw new Error(`the refund's transfer ${hash} reverted`);
  return hash;
}

/** Only a `ready` refund has a transfer to send; the code a console or script shows when it is not. */
export function refundNotReady(status: string): ProblemError {
  return new ProblemError({
    code: "refund_not_ready",
    detail:
      status === "awaiting_destination"
        ? "The customer has not named the receiving address yet: nothing can be sent."
        : `This refund is ${status}: only a ready refund is sent.`,
    extensions: { refundStatus: status },
  });
}

/**
 * The partner's "Send with the test account" (`POST /v1/refunds/{id}/test-send`): its
 * own `ready` refund, in local mode on an Anvil node only. Answers the transaction and
 * the refund as it reads now (the index completes it afterwards).
 */
export async function sendRefundWithTestAccount(context: AppContext, params: { partnerId: string; refundId: string }) {
  if (!context.settings.localMode) throw localModeOnly("Sending with the test account exists in local mode only.");
  const refund = await partnerRefund(context.store, params);
  const instructions = refundInstructions(refund);
  if (refund.status !== "ready" || instructions === null) throw refundNotReady(refund.status);
  const network = networkByChainId(context, refund.chainId);
  const client = context.rpc.get(refund.chainId);
  if (network === undefined || client === undefined || !(await isAnvilNode(context, refund.chainId))) {
    throw localModeOnly("This refund's network is not a local Anvil.");
  }
  const claimedAt = Date.now();
  if (!(await context.store.transaction().execute((trx) => claimTestSend(trx, { refundId: refund.id, now: claimedAt })))) {
    const current = await partnerRefund(context.store, params);
    if (current.status !== "ready") throw refundNotReady(current.status);
    throw new ProblemError({
      code: "refund_already_sent",
      detail:
        "The test account already sent this refund (or is sending it): wait for the index to show the transfer. Nothing more was sent.",
    });
  }
  let transactionHash: Hex;
  try {
    transactionHash = await sendFromAnvilAccount(client, {
      from: instructions.from,
      to: instructions.transaction.to,
      data: instructions.transaction.data,
    });
  } catch (error) {
    // Refused by the node, or reverted: no money moved, so it may be tried again. A
    // transaction the node took with no receipt yet may still land: its claim stays.
    if (!(error instanceof OutcomeUnknown)) {
      await context.store
        .transaction()
        .execute((trx) => releaseTestSend(trx, { refundId: refund.id, claimedAt, now: Date.now() }));
    }
    throw error;
  }
  return { transactionHash, refund: await viewRefund(context.store, await partnerRefund(context.store, params)) };
}
