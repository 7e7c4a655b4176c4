import { type Address, type Hex, isAddressEqual } from "viem";
import type { IndexedRewardClaim, IndexedTransfer } from "../indexed/indexed-chain.js";
import { SUBSCRIPTION_CHARGE_RESOLUTION } from "../payments/payment-record.js";
import type { PaymentStatus } from "../store/database.js";

/**
 * What the service made of each movement of money through a payment address
 * (docs/accounting.md, "Kinds"). Pure: an indexed transfer plus the facts gathered
 * for it (api/accounting/ledger-facts.ts) give its ledger entries.
 */
export const LEDGER_KINDS = [
  "settled",
  "underpaid",
  "overpaid",
  "late",
  "unmatched_in",
  "refund",
  "unmatched_out",
  "reward_claim",
  // Issue 44: a subscription's charge, paid from the subscriber's wallet by the manager's
  // `transferFrom` and settled by the subscription worker as its charge's order.
  "subscription_charge",
  // Issue 40: a 0-USDC transfer (or a `transferFrom` of 0 naming any wallet as payer) moves
  // nothing; anyone sends one for the gas. It is never a payment, whichever way it went.
  "zero_value",
  "adjustment", // a later fact touching a closed period, reported in the next one's ledger (SPEC 17.1)
] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/**
 * The kinds the reconciliation sums: every kind but `zero_value`, whose sum is 0 by
 * definition (so the report and its CSV columns stay SPEC 17's and 17.1's).
 */
export type SumKind = Exclude<LedgerKind, "zero_value">;
export const SUM_KINDS = LEDGER_KINDS.filter((kind): kind is SumKind => kind !== "zero_value");

/** What the settlement worker recorded for an incoming transfer (payment-record.ts). */
export type PaymentFact = { status: PaymentStatus; reason: string | null; resolution?: string | null; orderId: string | null };
/**
 * What the refunds record made of an outgoing transfer (api/refunds/outgoing-transfer-record.ts), with the
 * matched refund's order and reason code when there is one.
 */
export type OutgoingFact = {
  status: "matched" | "unmatched";
  refundId: string | null;
  refund?: { orderId: string | null; reason: string };
};
/** A `RewardClaimed` seen in the same transaction (the distributor's `transferFrom` from the funder). */
export type RewardClaimFact = { rewardId: string; orderId?: string; funder: Address; recipient: Address; amount: bigint };

export type TransferFacts = {
  /** The payment recorded for this transfer, when it is incoming and the settlement worker saw it. */
  payment?: PaymentFact;
  /** The outgoing-transfer record's match, when it is outgoing. */
  outgoing?: OutgoingFact;
  /** Reward claims of the transfer's transaction. */
  rewardClaims?: readonly RewardClaimFact[];
};

export type Classification = {
  kind: LedgerKind;
  reason?: string;
  orderId?: string;
  refundId?: string;
  rewardId?: string;
};

/** A ledger entry, in domain form: one leg of a transfer seen from one payment address. */
export type LedgerEntry = Classification & {
  chainId: number;
  blockNumber: bigint;
  blockHash: Hex;
  blockTimestamp: bigint;
  transactionHash: Hex;
  logIndex: number;
  from: Address;
  to: Address;
  value: bigint;
  paymentAddress: Address;
  /** 0: money out of `paymentAddress`; 1: money in. A transfer between two watched addresses has both legs. */
  leg: 0 | 1;
};

/** Reasons of an unresolved payment that have a kind of their own (SPEC 11). */
const REASON_KINDS: Record<string, LedgerKind> = { underpaid: "underpaid", overpaid: "overpaid", late: "late" };

/**
 * The payments whose incoming kind is not `unmatched_in` (classifyIncoming below): a
 * status of `statuses`, or one of `reasonedStatuses` with a reason of `reasons`. The
 * reconciliation classifies only these transfers one by one; the rest of the money in
 * is `unmatched_in` whatever it is.
 */
export const PAYMENTS_OF_OWN_KIND: {
  statuses: readonly PaymentStatus[];
  reasonedStatuses: readonly PaymentStatus[];
  reasons: readonly string[];
} = {
  statuses: ["settled", "attached"],
  reasonedStatuses: ["unresolved", "refund_requested"],
  reasons: Object.keys(REASON_KINDS),
};

/** Money into a payment address. */
export function classifyIncoming(payment: PaymentFact | undefined): Classification {
  const order = payment?.orderId ? { orderId: payment.orderId } : {};
  if (payment === undefined) return { kind: "unmatched_in", reason: "not_yet_processed" };
  switch (payment.status) {
    case "settled":
      if (payment.resolution === SUBSCRIPTION_CHARGE_RESOLUTION) return { kind: "subscription_charge", ...order };
      return { kind: "settled", ...order };
    case "attached":
      // An unresolved payment attached to an order later is a settlement too (its reason is kept for the record).
      return { kind: "settled", ...order };
    case "pending":
      return { kind: "unmatched_in", reason: "awaiting_confirmations", ...order };
    case "reorged":
      return { kind: "unmatched_in", reason: "reorged", ...order };
    case "unresolved":
    case "refund_requested": {
      const reason = payment.reason ?? "unmatched";
      const kind = REASON_KINDS[reason];
      return kind === undefined ? { kind: "unmatched_in", reason, ...order } : { kind, reason, ...order };
    }
  }
}

/** Money out of a payment address: a reward claim paid from it, a refund, or the partner's own move. */
export function classifyOutgoing(
  transfer: Pick<IndexedTransfer, "from" | "to" | "value">,
  facts: Pick<TransferFacts, "outgoing" | "rewardClaims">,
): Classification {
  const claim = facts.rewardClaims?.find(
    (candidate) =>
      isAddressEqual(candidate.funder, transfer.from) &&
      isAddressEqual(candidate.recipient, transfer.to) &&
      candidate.amount === transfer.value,
  );
  if (claim !== undefined)
    return { kind: "reward_claim", rewardId: claim.rewardId, ...(claim.orderId === undefined ? {} : { orderId: claim.orderId }) };
  const outgoing = facts.outgoing;
  if (outgoing?.status === "matched" && outgoing.refundId !== null) {
    // The accountant files a refund under its order with the partner's reason code (SPEC 17.1).
    const refund = outgoing.refund;
    return {
      kind: "refund",
      refundId: outgoing.refundId,
      ...(refund === undefined ? {} : { reason: refund.reason }),
      ...(refund?.orderId == null ? {} : { orderId: refund.orderId }),
    };
  }
  return { kind: "unmatched_out" };
}

/**
 * The entries of one transfer for the payment addresses in view (lower case): an
 * outgoing leg when it leaves one of them, an incoming leg when it reaches one (both
 * for a move between two of them), outgoing first.
 */
export function ledgerEntriesOf(transfer: IndexedTransfer, facts: TransferFacts, addresses: ReadonlySet<string>): LedgerEntry[] {
  const base = {
    chainId: transfer.chainId,
    blockNumber: transfer.blockNumber,
    blockHash: transfer.blockHash,
    blockTimestamp: transfer.blockTimestamp,
    transactionHash: transfer.transactionHash,
    logIndex: transfer.logIndex,
    from: transfer.from,
    to: transfer.to,
    value: transfer.value,
  };
  const entries: LedgerEntry[] = [];
  // Before any fact: a payment recorded for a zero-value transfer before issue 40 does not make it one.
  const zero: Classification | undefined = transfer.value === 0n ? { kind: "zero_value" } : undefined;
  if (addresses.has(transfer.from.toLowerCase()))
    entries.push({ ...base, ...(zero ?? classifyOutgoing(transfer, facts)), paymentAddress: transfer.from, leg: 0 });
  if (addresses.has(transfer.to.toLowerCase()))
    entries.push({ ...base, ...(zero ?? classifyIncoming(facts.payment)), paymentAddress: transfer.to, leg: 1 });
  return entries;
}

/**
 * The entry of a reward claim paid from a funding address that is not a payment address
 * in view: the index does not watch that address's transfers, so the distributor's
 * `RewardClaimed` log is the evidence (funder, recipient, amount, at its log index; the
 * `Transfer` it caused is in the same transaction). A claim of a reward this service
 * granted from that funder is `reward_claim`; any other claim is money out all the same.
 */
export function fundingClaimEntry(
  claim: IndexedRewardClaim,
  reward: { id: string; orderId: string; funder: string | null } | undefined,
): LedgerEntry {
  const ours = reward !== undefined && reward.funder !== null && isAddressEqual(reward.funder as Address, claim.funder);
  return {
    ...(ours
      ? { kind: "reward_claim" as const, rewardId: reward.id, orderId: reward.orderId }
      : { kind: "unmatched_out" as const }),
    chainId: claim.chainId,
    blockNumber: claim.blockNumber,
    blockHash: claim.blockHash,
    blockTimestamp: claim.blockTimestamp,
    transactionHash: claim.transactionHash,
    logIndex: claim.logIndex,
    from: claim.funder,
    to: claim.recipient,
    value: claim.amount,
    paymentAddress: claim.funder,
    leg: 0,
  };
}

/** Sums per kind, every summed kind present. */
export function emptySums(): Record<SumKind, bigint> {
  return Object.fromEntries(SUM_KINDS.map((kind) => [kind, 0n])) as Record<SumKind, bigint>;
}

/** The effect of an entry on its payment address's balance. */
export function signedValue(entry: Pick<LedgerEntry, "leg" | "value">): bigint {
  return entry.leg === 1 ? entry.value : -entry.value;
}
