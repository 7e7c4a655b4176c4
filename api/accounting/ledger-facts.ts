import type { Hex } from "viem";
import type { AppContext } from "../app-context.js";
import { sessionsByIds } from "../checkout/session-record.js";
import type { IndexedRewardClaim, IndexedTransfer } from "../indexed/indexed-chain.js";
import { readByTransactions } from "../indexed/whole-reads.js";
import { ordersByIds } from "../orders/order-record.js";
import { sessionMetadata } from "../outbox/record-event.js";
import { paymentsByKeys } from "../payments/payment-record.js";
import { outgoingTransfersByKeys } from "../refunds/outgoing-transfer-record.js";
import { refundsByIds } from "../refunds/refund-record.js";
import { rewardsByOnchainIds } from "../rewards/reward-record.js";
import { logKey } from "../values/log-key.js";
import type { OutgoingFact, PaymentFact, RewardClaimFact, TransferFacts } from "./ledger-rules.js";

const transactionKey = (transfer: Pick<IndexedTransfer, "chainId" | "transactionHash">) =>
  `${transfer.chainId}:${transfer.transactionHash.toLowerCase()}`;

export type LedgerFacts = (transfer: IndexedTransfer) => TransferFacts;

/**
 * THE place where what the service made of a page of transfers is gathered, one
 * query per source, for the pure rules of ledger-rules.ts:
 *
 * - incoming: the payment the settlement worker recorded (payment-record.ts);
 * - outgoing: the refunds record's match of the transfer (`outgoingTransfersByKeys`
 *   in api/refunds/outgoing-transfer-record.ts);
 * - reward claims: the index's `reward_claim` rows paid by these payment addresses
 *   in the outgoing transfers' transactions (`context.indexed.rewardClaims`), grouped by
 *   transaction, their on-chain reward ids turned into the service's reward ids.
 */
export async function gatherLedgerFacts(
  context: Pick<AppContext, "store" | "indexed">,
  transfers: readonly IndexedTransfer[],
  addresses: ReadonlySet<string>,
): Promise<LedgerFacts> {
  const incoming = transfers.filter((transfer) => addresses.has(transfer.to.toLowerCase()));
  const outgoing = transfers.filter((transfer) => addresses.has(transfer.from.toLowerCase()));

  const payments: Map<string, PaymentFact> = await paymentsByKeys(context.store, incoming);
  const matches: Map<string, OutgoingFact> = await outgoingTransfersByKeys(context.store, outgoing);
  const refunds = await refundsByIds(
    context.store,
    [...matches.values()].flatMap((match) => (match.refundId === null ? [] : [match.refundId])),
  );
  for (const match of matches.values()) {
    const refund = match.refundId === null ? undefined : refunds.get(match.refundId);
    if (refund !== undefined) match.refund = { orderId: refund.orderId, reason: refund.reason };
  }
  const claims = await rewardClaimsOf(context, outgoing);

  return (transfer) => ({
    payment: payments.get(logKey(transfer)),
    outgoing: matches.get(logKey(transfer)),
    rewardClaims: claims.get(transactionKey(transfer)),
  });
}

/** The reward claims paid by the senders of these outgoing transfers, in their transactions, by transaction. */
async function rewardClaimsOf(
  context: Pick<AppContext, "store" | "indexed">,
  outgoing: readonly IndexedTransfer[],
): Promise<Map<string, RewardClaimFact[]>> {
  const claims = new Map<string, RewardClaimFact[]>();
  if (outgoing.length === 0) return claims;
  const byChain = new Map<number, IndexedTransfer[]>();
  for (const transfer of outgoing) byChain.set(transfer.chainId, [...(byChain.get(transfer.chainId) ?? []), transfer]);
  const indexed: IndexedRewardClaim[] = [];
  // By transaction (the claims table's key), however far apart the transfers' blocks are.
  for (const [chainId, transfers] of byChain) {
    const funders = [...new Set(transfers.map((transfer) => transfer.from))];
    const hashes = [...new Set(transfers.map((transfer) => transfer.transactionHash.toLowerCase() as Hex))];
    indexed.push(
      ...(await readByTransactions<IndexedRewardClaim>(hashes, ({ transactionHashes, after, limit }) =>
        context.indexed.rewardClaims({ chainIds: [chainId], transactionHashes, funders, after, limit }),
      )),
    );
  }
  const rewards = await rewardsByOnchainIds(context.store, [...new Set(indexed.map((claim) => claim.rewardId))]);
  const rewardIdOf = new Map(rewards.map((reward) => [reward.onchainId.toLowerCase(), reward.id]));
  const orderIdOf = new Map(rewards.map((reward) => [reward.id, reward.orderId]));
  for (const claim of indexed) {
    const rewardId = rewardIdOf.get(claim.rewardId.toLowerCase());
    // A claim of a reward this service never granted is not ours to name: the transfer stays `unmatched_out`.
    if (rewardId === undefined) continue;
    const key = transactionKey(claim);
    claims.set(key, [
      ...(claims.get(key) ?? []),
      { rewardId, orderId: orderIdOf.get(rewardId), funder: claim.funder, recipient: claim.recipient, amount: claim.amount },
    ]);
  }
  return claims;
}

/** What an accountant files a movement under: the partner's own order id and the order's metadata (SPEC 17.1). */
export type OrderDetails = { externalOrderId: string; metadata: Record<string, string> };

/**
 * The external id and metadata of the orders named, by order id: the metadata of the
 * session that paid the order (as `GET /v1/orders/:id` shows it), else of its latest session.
 */
export async function orderDetailsOf(
  context: Pick<AppContext, "store">,
  orderIds: readonly string[],
): Promise<Map<string, OrderDetails>> {
  const orders = await ordersByIds(context.store, orderIds);
  const settledSessions = await sessionsByIds(
    context.store,
    [...orders.values()].flatMap((order) => (order.settledSessionId === null ? [] : [order.settledSessionId])),
  );
  const metadataOfSession = new Map(settledSessions.map((session) => [session.id, session.metadata]));
  const details = new Map<string, OrderDetails>();
  for (const order of orders.values()) {
    const metadata =
      order.settledSessionId === null
        ? await sessionMetadata(context.store, { orderId: order.id })
        : metadataOfSession.get(order.settledSessionId);
    details.set(order.id, { externalOrderId: order.externalOrderId, metadata: metadata ?? {} });
  }
  return details;
}
