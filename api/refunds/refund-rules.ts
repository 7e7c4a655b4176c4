import { type Address, isAddressEqual, zeroAddress } from "viem";
import type { RefundReason, RefundStatus } from "../store/refund-tables.js";

/**
 * The rules of refunds, pure (SPEC 15, docs/refunds.md): what remains refundable,
 * the refund status an order shows, which destinations are refused, and which
 * ready refund an outgoing transfer completes. The record modules and the worker
 * apply them; test/unit/refund-rules.test.ts pins them.
 */

export const REFUND_REASONS = [
  "requested_by_customer",
  "duplicate",
  "wrong_amount",
  "late",
  "other",
] as const satisfies readonly RefundReason[];
export const REFUND_STATUSES = [
  "awaiting_destination",
  "ready",
  "pending",
  "succeeded",
  "cancelled",
] as const satisfies readonly RefundStatus[];

/** A refund that counts against what was paid: every one but a cancelled one. */
export const isLive = (refund: { status: RefundStatus }) => refund.status !== "cancelled";

/** What is still refundable of a payment of `paid`, given its refunds. Never negative. */
export function remainingRefundable(paid: bigint, refunds: readonly { status: RefundStatus; amount: bigint }[]): bigint {
  const committed = refunds.filter(isLive).reduce((sum, refund) => sum + refund.amount, 0n);
  return committed >= paid ? 0n : paid - committed;
}

export type RefundTotals = {
  /** Succeeded refunds. */
  amountRefunded: bigint;
  /** Ready and pending refunds: instructed or seen, not final. */
  amountRefundPending: bigint;
  refundStatus: "none" | "partial" | "full";
};

/** What an order (or purchase) shows of its refunds: `full` once succeeded refunds reach what was paid. */
export function refundTotals(paid: bigint | null, refunds: readonly { status: RefundStatus; amount: bigint }[]): RefundTotals {
  const sum = (statuses: RefundStatus[]) =>
    refunds.filter((refund) => statuses.includes(refund.status)).reduce((total, refund) => total + refund.amount, 0n);
  const amountRefunded = sum(["succeeded"]);
  const amountRefundPending = sum(["ready", "pending"]);
  const refundStatus = amountRefunded === 0n ? "none" : paid !== null && paid > 0n && amountRefunded >= paid ? "full" : "partial";
  return { amountRefunded, amountRefundPending, refundStatus };
}

export type DestinationRefusal =
  | "destination_is_zero_address"
  | "destination_is_token"
  | "destination_is_payment_address"
  | "destination_is_service_address";

/**
 * Why money may not be sent to `destination`, or undefined when it may: the zero
 * address burns it, the token contract traps it, a payment address (of any partner)
 * would be taken for an incoming payment, and an address of the service itself (a
 * relayer, the certificate contract, the reward distributor, on any network) holds
 * money nobody would ever send on.
 */
export function refusedDestination(params: {
  destination: Address;
  token: Address;
  isPaymentAddress: boolean;
  serviceAddresses: readonly Address[];
}): DestinationRefusal | undefined {
  if (isAddressEqual(params.destination, zeroAddress)) return "destination_is_zero_address";
  if (isAddressEqual(params.destination, params.token)) return "destination_is_token";
  if (params.isPaymentAddress) return "destination_is_payment_address";
  if (params.serviceAddresses.some((address) => isAddressEqual(address, params.destination))) {
    return "destination_is_service_address";
  }
  return undefined;
}

/** A reward distributor's `RewardClaimed` in a transfer's transaction (api/accounting/ledger-rules.ts reads the same). */
export type RewardClaimOfTransaction = { funder: Address; recipient: Address; amount: bigint };

/**
 * Whether a transfer is the distributor's `transferFrom` of a reward claim in its
 * transaction: the claim's funder, recipient and amount. Such a transfer is a reward
 * claim in the books, so it is never also a refund: one transfer, one fact.
 */
export function paysRewardClaim(
  transfer: { from: Address; to: Address; amount: bigint },
  claims: readonly RewardClaimOfTransaction[],
): boolean {
  return claims.some(
    (claim) =>
      isAddressEqual(claim.funder, transfer.from) &&
      isAddressEqual(claim.recipient, transfer.to) &&
      claim.amount === transfer.amount,
  );
}

/** An outgoing transfer as the matcher sees it. */
export type OutgoingFacts = {
  chainId: number;
  token: Address;
  from: Address;
  to: Address;
  amount: bigint;
  blockNumber: bigint;
  /** The block's timestamp, epoch milliseconds (only for a refund ready before its ready block was recorded). */
  minedAt: number;
  /** The partner owning the sending payment address. */
  partnerId: string | null;
  /** The reward claims of its transaction, as indexed: a transfer that pays one is that claim, not a refund. */
  rewardClaims: readonly RewardClaimOfTransaction[];
};

/** A ready refund as the matcher sees it. */
export type ReadyRefund = {
  id: string;
  partnerId: string;
  chainId: number;
  token: Address;
  destination: Address;
  amount: bigint;
  /** When it became ready, epoch milliseconds (orders refunds; matches only a legacy refund, see below). */
  readyAt: number;
  /** The indexed head when it became ready; null for a refund ready before migration 0018. */
  readyBlock: bigint | null;
  createdAt: number;
};

/**
 * Whether the transfer was mined after the refund became ready, in the chain's own
 * clock: in a block after the indexed head of that moment. The service's wall clock
 * and the chain's block time may disagree (a server clock running ahead, Anvil's clock
 * after a reorg), so comparing one with the other misses a transfer sent at once. Only
 * a refund ready before its head was recorded compares times, to the second.
 */
function minedAfterReady(transfer: OutgoingFacts, refund: ReadyRefund): boolean {
  if (refund.readyBlock !== null) return transfer.blockNumber > refund.readyBlock;
  return transfer.minedAt >= Math.floor(refund.readyAt / 1000) * 1000;
}

/** Whether `transfer` is a transfer that completes `refund` (SPEC 15's rule; "never used by another" is the store's). */
export function transferMatchesRefund(transfer: OutgoingFacts, refund: ReadyRefund): boolean {
  return (
    transfer.partnerId !== null &&
    transfer.partnerId === refund.partnerId &&
    transfer.chainId === refund.chainId &&
    isAddressEqual(transfer.token, refund.token) &&
    isAddressEqual(transfer.to, refund.destination) &&
    transfer.amount === refund.amount &&
    minedAfterReady(transfer, refund) &&
    !paysRewardClaim(transfer, transfer.rewardClaims)
  );
}

/** The refund a transfer completes: of those it matches, the one ready first (then created first, then by id). */
export function refundForTransfer(transfer: OutgoingFacts, ready: readonly ReadyRefund[]): ReadyRefund | undefined {
  return ready
    .filter((refund) => transferMatchesRefund(transfer, refund))
    .sort((a, b) => a.readyAt - b.readyAt || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
}

/** The reason a refund of an unresolved payment defaults to, from why the payment was not credited. */
export function reasonForUnresolved(paymentReason: string | null): RefundReason {
  switch (paymentReason) {
    case "duplicate_payment":
      return "duplicate";
    case "late":
      return "late";
    case "underpaid":
    case "overpaid":
      return "wrong_amount";
    default:
      return "other";
  }
}
