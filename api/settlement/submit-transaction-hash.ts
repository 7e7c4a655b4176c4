import { type Hex, isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import type { CheckoutSession } from "../checkout/session-record.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { ProblemError } from "../http/problem.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { findPayment, type Payment, recordedTransferTo } from "../payments/payment-record.js";
import { indexForm } from "../values/checksum-address.js";
import { wakeWorker } from "../workers/run-worker.js";
import { decideTransfer, recordTransfer } from "./record-transfer.js";
import { linkSubmittedMismatch } from "./submitted-mismatch.js";

/** Reasons a submitted hash does not pay the session (docs/errors.md, plus `wrong_payer` and `predates_session`). */
export type RejectionReason =
  | "wrong_amount"
  | "late"
  | "wrong_token"
  | "wrong_recipient"
  | "wrong_network"
  | "reverted"
  | "replay"
  | "not_found"
  | "wrong_payer"
  | "predates_session"
  | "duplicate_payment";

const rejectionText: Record<RejectionReason, string> = {
  wrong_amount: "The transfer's amount is not the exact amount this checkout displays.",
  late: "The transfer was mined after this checkout session expired.",
  wrong_token: "The transaction moved a token other than the canonical USDC of this network.",
  wrong_recipient: "The transaction sent USDC to an address other than this checkout's payment address.",
  wrong_network: "The transaction is on another network than the one this checkout displays.",
  reverted: "The transaction failed on chain (reverted); no USDC moved.",
  replay: "This transfer has already been credited to another payment.",
  not_found: "No transaction with this hash was found on this network. Check the hash and the network.",
  wrong_payer: "The transfer was not sent from the wallet this purchase belongs to.",
  predates_session: "The transfer was mined before this checkout session existed.",
  duplicate_payment:
    "This order has already been paid (or is being confirmed) by another transfer; this one is kept on record for a refund.",
};

export function paymentRejected(reason: RejectionReason, extensions: Record<string, unknown> = {}): ProblemError {
  return new ProblemError({
    status: reason === "not_found" ? 404 : 422,
    code: reason === "not_found" ? "payment_not_found" : reason,
    title: reason === "not_found" ? "Payment not found" : "The transaction does not pay this checkout",
    detail: rejectionText[reason],
    extensions: { reason, ...extensions },
  });
}

export type SubmissionResult = {
  status: "settled" | "payment_pending";
  transactionHash: Hex;
  confirmations: number;
  requiredConfirmations: number;
};

/**
 * Checks a submitted hash against the index (no RPC on the hit path). The hash
 * only helps to find the payment sooner: a transfer is credited from what it is
 * on chain, never from who submitted it, and a rejection changes nothing.
 */
export async function submitTransactionHash(
  context: AppContext,
  params: { session: CheckoutSession; transactionHash: Hex },
): Promise<SubmissionResult> {
  const { session } = params;
  const transactionHash = indexForm(params.transactionHash);
  const network = networkByChainId(context, session.chainId);
  if (network === undefined) throw new Error(`session ${session.id} is on a network that is not enabled`);
  const pending = (confirmations: number, status: SubmissionResult["status"]): SubmissionResult => ({
    status,
    transactionHash,
    confirmations,
    requiredConfirmations: network.confirmations,
  });

  // Fast path: the settlement worker has already recorded this very transfer (the
  // exact amount to this session's address on its chain); answer from that row.
  // The index's head (cached) is read beside it: one round trip to the store on the hit path.
  const [recorded, cachedHead] = await Promise.all([
    recordedTransferTo(context.store, {
      chainId: session.chainId,
      transactionHash,
      to: session.paymentAddress,
      amount: session.amountDue,
    }),
    context.indexed.heads().then((heads) => heads.get(session.chainId)?.blockNumber),
  ]);
  if (recorded !== undefined) {
    const head = headAtLeast(cachedHead, recorded.blockNumber);
    return answerForRecorded(recorded, session, recorded, head, pending);
  }

  const indexed = await context.indexed.transfersByHash(transactionHash);
  let onChain = indexed.filter((transfer) => transfer.chainId === session.chainId);
  const indexedYet = onChain.length > 0;
  if (!indexedYet) {
    if (indexed.length > 0) throw paymentRejected("wrong_network");
    // Not indexed (yet): one cached receipt look-up gives the transfers, judged below by
    // exactly the rules an indexed transfer meets.
    onChain = await transfersFromReceipt(context, session, transactionHash);
  }

  const canonical = onChain.filter((transfer) => isAddressEqual(transfer.token, session.tokenAddress));
  const toSession = canonical.filter((transfer) => isAddressEqual(transfer.to, session.paymentAddress));
  if (toSession.length === 0) {
    if (canonical.length === 0 && onChain.length > 0) throw paymentRejected("wrong_token");
    throw paymentRejected("wrong_recipient");
  }
  const exact = toSession.find((transfer) => transfer.value === session.amountDue);
  if (exact === undefined) {
    // A transfer already credited elsewhere is a replay whatever its amount.
    for (const transfer of toSession) {
      const credited = await findPayment(context.store, transfer);
      if (credited?.sessionId != null && credited.sessionId !== session.id && credited.status !== "unresolved") {
        throw paymentRejected("replay");
      }
    }
    // The money is on the partner's address: record it against this session so nobody is stuck.
    const received = toSession[0]!;
    const linked = await linkSubmittedMismatch(context, { session, transfer: received, network });
    if (linked) wakeWorker(DISPATCHER_NAME);
    throw paymentRejected("wrong_amount", {
      amountReceived: received.value.toString(),
      expectedAmount: session.amountDue.toString(),
      recordedForShop: linked,
    });
  }

  // An indexed transfer's block is indexed: the head is at least there. (A receipt's
  // block may be ahead of the index; then the cached head is all we know.)
  const head = indexedYet
    ? await indexedHeadAtLeast(context, session.chainId, exact.blockNumber)
    : ((await context.indexed.heads()).get(session.chainId)?.blockNumber ?? exact.blockNumber);
  const credited = await findPayment(context.store, exact);
  if (credited !== undefined) return answerForRecorded(credited, session, exact, head, pending);

  // Decide without writing first: a rejection must change nothing.
  const decision = await decideTransfer(context.store, exact);
  if (decision.kind === "unresolved") {
    // The settlement worker or a concurrent submission (another replica) may have recorded
    // this very transfer since we looked: then the order is taken by it, and it is the answer.
    const recordedSince = await findPayment(context.store, exact);
    if (recordedSince !== undefined) return answerForRecorded(recordedSince, session, exact, head, pending);
    const rejection = rejectionFor(decision.reason, decision.session, session);
    // A late payment of this very session is recorded now, linked to it, and the partner told.
    if (rejection === "late" && decision.session?.id === session.id) {
      await recordTransfer(context.store, { transfer: exact, network, head });
      wakeWorker(DISPATCHER_NAME);
      throw paymentRejected("late", {
        amountReceived: exact.value.toString(),
        expectedAmount: session.amountDue.toString(),
        recordedForShop: true,
      });
    }
    throw paymentRejected(rejection);
  }
  if (decision.session.id !== session.id) throw paymentRejected("replay");
  // Only the index credits: until the indexer has the transfer, it is seen and pending.
  if (!indexedYet) return pending(0, "payment_pending");

  const payment = await recordTransfer(context.store, { transfer: exact, network, head });
  wakeWorker(DISPATCHER_NAME);
  return answerForRecorded(payment, session, exact, head, pending);
}

/**
 * The indexed head of a chain, at least the block of a transfer the index holds: the
 * head is cached for a few milliseconds and Ponder moves its checkpoint after the
 * block's rows are readable, so a fresh transfer may be a block ahead of the cached head.
 */
async function indexedHeadAtLeast(context: AppContext, chainId: number, blockNumber: bigint): Promise<bigint> {
  return headAtLeast((await context.indexed.heads()).get(chainId)?.blockNumber, blockNumber);
}

/** The cached head, or the block of a transfer the index holds when the cached head is behind it. */
function headAtLeast(head: bigint | undefined, blockNumber: bigint): bigint {
  return head === undefined || head < blockNumber ? blockNumber : head;
}

/** The transfers of a transaction the index does not hold, from one cached receipt look-up. */
async function transfersFromReceipt(
  context: AppContext,
  session: CheckoutSession,
  transactionHash: Hex,
): Promise<IndexedTransfer[]> {
  const client = context.rpc.get(session.chainId);
  if (client === undefined) throw paymentRejected("not_found");
  const facts = await context.explainer.lookUp({ client, chainId: session.chainId, sessionId: session.id, transactionHash });
  if (!facts.found) throw paymentRejected("not_found");
  if (facts.reverted) throw paymentRejected("reverted");
  const toRecipient = facts.transfers.filter((transfer) => isAddressEqual(transfer.to, session.paymentAddress));
  if (toRecipient.length > 0) return toRecipient;
  // Nothing to the session's address: say which mistake it most likely is.
  if (facts.transfers.some((transfer) => isAddressEqual(transfer.token, session.tokenAddress)))
    throw paymentRejected("wrong_recipient");
  throw paymentRejected(facts.transfers.length > 0 ? "wrong_token" : "not_found");
}

function answerForRecorded(
  payment: Pick<Payment, "sessionId" | "status" | "reason">,
  session: CheckoutSession,
  transfer: { blockNumber: bigint },
  head: bigint,
  answer: (confirmations: number, status: SubmissionResult["status"]) => SubmissionResult,
): SubmissionResult {
  if (payment.sessionId !== session.id || (payment.status !== "settled" && payment.status !== "pending")) {
    throw paymentRejected(payment.sessionId === session.id ? rejectionForRecorded(payment) : "replay");
  }
  return answer(confirmationsOf(transfer, head), payment.status === "settled" ? "settled" : "payment_pending");
}

export function rejectionFor(
  reason: string,
  matched: Pick<CheckoutSession, "id"> | undefined,
  session: Pick<CheckoutSession, "id">,
): RejectionReason {
  if (matched !== undefined && matched.id !== session.id) return "replay";
  if (reason === "late" && matched === undefined) return "late";
  switch (reason) {
    case "late":
    case "wrong_payer":
    case "predates_session":
      return reason;
    case "duplicate_payment":
      return "duplicate_payment";
    default:
      return "wrong_amount";
  }
}

export function rejectionForRecorded(payment: { reason?: string | null }): RejectionReason {
  const reason = payment.reason ?? "";
  return reason === "late" || reason === "wrong_payer" || reason === "predates_session" || reason === "duplicate_payment"
    ? reason
    : "replay";
}
