import type { Kysely } from "kysely";
import { type Address, type Hex, isAddressEqual } from "viem";
import { createCertificate } from "../certificates/certificate-record.js";
import { findReservation, holdReferenceForLateWindow } from "../checkout/amount-reference.js";
import { expireSession } from "../checkout/expire-session.js";
import {
  type CheckoutSession,
  getSession,
  moveSession,
  openSessionsOfOrder,
  orderHasPayingSession,
  smallestOpenAmountDue,
} from "../checkout/session-record.js";
import type { NetworkConfig } from "../config/networks.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { creditOrder, findOrder, getOrder } from "../orders/order-record.js";
import { recordEvent } from "../outbox/record-event.js";
import { paymentAddressOwner } from "../partners/payment-addresses.js";
import {
  findPayment,
  forgetPendingPayment,
  insertPayment,
  movePayment,
  type Payment,
  relocatePayment,
} from "../payments/payment-record.js";
import { grantCashbackAtSettlement } from "../rewards/grant-reward.js";
import type { Database, PaymentStatus } from "../store/database.js";
import { checksum } from "../values/checksum-address.js";
import { logKey } from "../values/log-key.js";

/** Why a transfer that reached a payment address did not settle a session (docs/errors.md, and ours). */
export type UnresolvedReason =
  | "unmatched"
  | "late"
  | "predates_session"
  | "wrong_payer"
  | "duplicate_payment"
  /** Submitted on a session with less (more) than its amount: see submitted-mismatch.ts. */
  | "underpaid"
  | "overpaid";

export type TransferDecision =
  | { kind: "match"; session: CheckoutSession }
  | { kind: "unresolved"; reason: UnresolvedReason; session: CheckoutSession | undefined };

/** What the matcher knows of a transfer whose amount names a session, in domain units. */
export type TransferFacts = {
  /** The block's timestamp, epoch milliseconds. */
  minedAt: number;
  /** The payer (any case: compared with `isAddressEqual`). */
  from: Address;
  /** When the session's reference was released (it ended unused), epoch milliseconds. */
  referenceReleasedAt: number;
  session: Pick<CheckoutSession, "requiredPayer" | "createdAt" | "expiresAt" | "lateUntil">;
  /** A session of the order is confirming or has settled a payment, or the order is credited. */
  orderTaken: boolean;
};

/**
 * How far before the second a session was created in a block's timestamp may be and still
 * pay it. A block's timestamp is the chain's clock, not ours, and it is when the block
 * began: Base stamps a block with the start of its 2-second slot, so a transfer sent a
 * moment after the session was created can carry an earlier second; Anvil's clock has
 * been seen a second behind the machine's under load. Five seconds covers both; an older
 * transfer is `predates_session` (it was not sent for this session).
 */
export const BLOCK_CLOCK_TOLERANCE_MS = 5_000;

/**
 * The matching rules, pure: whether a transfer whose exact amount names a session
 * may settle it, or why not. `linked` says whether the unresolved payment is
 * recorded with that session (the partner is told which order it was meant for).
 */
export function judgeTransfer(
  facts: TransferFacts,
): { kind: "match" } | { kind: "unresolved"; reason: UnresolvedReason; linked: boolean } {
  const { minedAt, session } = facts;
  // Past the late window the amount no longer names this session; it is still late.
  if (minedAt > session.lateUntil) return { kind: "unresolved", reason: "late", linked: false };
  // The session ended unused and its reference was released: the amount names no session any more.
  if (minedAt > facts.referenceReleasedAt) return { kind: "unresolved", reason: "unmatched", linked: false };
  if (session.requiredPayer !== null && !isAddressEqual(session.requiredPayer, facts.from)) {
    return { kind: "unresolved", reason: "wrong_payer", linked: true };
  }
  if (minedAt < Math.floor(session.createdAt / 1000) * 1000 - BLOCK_CLOCK_TOLERANCE_MS)
    return { kind: "unresolved", reason: "predates_session", linked: true };
  if (minedAt > session.expiresAt) return { kind: "unresolved", reason: "late", linked: true };
  // One order, one credit: a payment of any of the order's sessions (a superseded one
  // paid before the supersede, say) that is settled or still confirming makes this
  // transfer a duplicate, kept for a refund.
  if (facts.orderTaken) return { kind: "unresolved", reason: "duplicate_payment", linked: true };
  return { kind: "match" };
}

/**
 * Which session a transfer pays, read from the transfer alone: the exact amount
 * on that address is the reference; the payer (RWA), the session's lifetime and
 * the order's state decide whether it may settle.
 */
export async function decideTransfer(trx: Kysely<Database>, transfer: IndexedTransfer): Promise<TransferDecision> {
  const reservation = await findReservation(trx, {
    chainId: transfer.chainId,
    paymentAddress: transfer.to,
    amountDue: transfer.value,
  });
  if (reservation === undefined) return { kind: "unresolved", reason: "unmatched", session: undefined };
  const session = await getSession(trx, reservation.sessionId);
  const order = await getOrder(trx, session.orderId);
  const judged = judgeTransfer({
    minedAt: Number(transfer.blockTimestamp) * 1000,
    from: transfer.from,
    referenceReleasedAt: reservation.releasedAt,
    session,
    orderTaken: order.settledSessionId !== null || (await orderHasPayingSession(trx, session.orderId)),
  });
  if (judged.kind === "match") return { kind: "match", session };
  return { kind: "unresolved", reason: judged.reason, session: judged.linked ? session : undefined };
}

/**
 * Whether a transfer to a payment address is a payment at all. One of 0 USDC moves
 * nothing, and anyone sends it for the gas, "from" any wallet through a `transferFrom`
 * of 0 (address poisoning): it is never recorded as a payment, so it never waits in the
 * partner's unresolved queue (issue 40). The ledger lists it as `zero_value`
 * (api/accounting/ledger-rules.ts).
 */
export function isPaymentTransfer(transfer: Pick<IndexedTransfer, "value">): boolean {
  return transfer.value > 0n;
}

/**
 * Dust anyone can send cheaply to flood a partner's receiver (issue 24): less than the
 * smallest amount of any open session on that address, and under `DUST_CEILING` (so a
 * customer's real mis-sent payment is always told), naming no session. It is recorded
 * like every payment (the books see it, the partner can list it), but no
 * `payment.unresolved` event is written for it.
 */
async function isSpam(
  trx: Kysely<Database>,
  params: { transfer: IndexedTransfer; decision: TransferDecision & { kind: "unresolved" } },
): Promise<boolean> {
  const { transfer, decision } = params;
  if (decision.session !== undefined || decision.reason !== "unmatched") return false;
  const smallest = await smallestOpenAmountDue(trx, { chainId: transfer.chainId, paymentAddress: transfer.to });
  return smallest !== undefined && transfer.value < smallest && transfer.value < DUST_CEILING;
}

/** 1 USDC: a transfer of this much or more always reaches the partner as an event. */
export const DUST_CEILING = 1_000_000n;

/** A payment for an indexed transfer, as first recorded. */
export function newPayment(
  transfer: IndexedTransfer,
  params: { partnerId: string | null; sessionId: string | null; status: PaymentStatus; reason: string | null; now: number },
): Payment {
  return {
    chainId: transfer.chainId,
    transactionHash: transfer.transactionHash,
    logIndex: transfer.logIndex,
    partnerId: params.partnerId,
    sessionId: params.sessionId,
    status: params.status,
    reason: params.reason,
    from: checksum(transfer.from),
    to: checksum(transfer.to),
    amount: transfer.value,
    blockNumber: transfer.blockNumber,
    blockHash: transfer.blockHash,
    minedAt: Number(transfer.blockTimestamp) * 1000,
    resolution: null,
    createdAt: params.now,
    updatedAt: params.now,
  };
}

/**
 * Records what a newly indexed transfer to a payment address means, once: the
 * payment row's key (chain, tx hash, log index) is the replay guard. A match
 * becomes `payment_pending` or, with enough confirmations, `settled` with its
 * `purchase.settled` event in the same transaction.
 */
export async function recordTransfer(
  store: Kysely<Database>,
  params: { transfer: IndexedTransfer; network: NetworkConfig; head: bigint; now?: number },
): Promise<Payment> {
  const { transfer, network } = params;
  const now = params.now ?? Date.now();
  return store.transaction().execute(async (trx) => {
    const existing = await findPayment(trx, transfer);
    if (existing !== undefined) return existing;

    const decision = await decideTransfer(trx, transfer);
    const confirmations = confirmationsOf(transfer, params.head);
    const owner = await paymentAddressOwner(trx, { chainId: transfer.chainId, address: transfer.to });
    const payment = newPayment(transfer, {
      partnerId: decision.session?.partnerId ?? owner ?? null,
      sessionId: decision.session?.id ?? null,
      status: decision.kind === "unresolved" ? "unresolved" : confirmations >= network.confirmations ? "settled" : "pending",
      reason: decision.kind === "unresolved" ? decision.reason : null,
      now,
    });
    // Another process may have recorded it since we looked: its row stands.
    if (!(await insertPayment(trx, payment))) {
      const recorded = await findPayment(trx, transfer);
      if (recorded === undefined)
        throw new Error(`payment ${transfer.transactionHash}:${transfer.logIndex} vanished while recorded`);
      return recorded;
    }
    // A session that saw a transfer may see another (a duplicate, a top-up): its reference stays its own.
    if (decision.session !== undefined) await holdReferenceForLateWindow(trx, decision.session);

    if (decision.kind === "unresolved") {
      if (payment.partnerId !== null && !(await isSpam(trx, { transfer, decision }))) {
        await recordUnresolvedEvent(trx, { payment, session: decision.session, network, now });
      }
      return payment;
    }
    const moved = await moveSession(trx, {
      session: decision.session,
      transition: payment.status === "settled" ? "settle" : "pay",
      now,
    });
    if (!moved) throw new Error(`session ${decision.session.id} changed while its payment was recorded`);
    if (
      payment.status === "settled" &&
      !(await settleOrder(trx, { session: decision.session, payment, network, confirmations, now }))
    ) {
      return flagDuplicate(trx, { payment, session: { ...decision.session, status: "settled" }, network, now });
    }
    return payment;
  });
}

/**
 * Where a pending payment's transfer is, as the settlement worker found it: in the index
 * in its recorded block; not in the index (yet, or any more: a lagging or rewound index)
 * but on the chain in that block; on the chain in another block (re-mined by a reorg);
 * or gone from the chain (no receipt, or a failed one).
 */
export type PendingWhereabouts =
  | { kind: "indexed" }
  | { kind: "not_indexed" }
  | { kind: "moved"; blockNumber: bigint; blockHash: Hex }
  | { kind: "gone" };

/**
 * A pending payment whose block now has enough confirmations settles. It is forgotten only
 * when the chain says its transaction is gone: an index that has not reached its block, or
 * was rewound below it (Ponder's crash recovery, a new schema catching up), says nothing
 * about the chain, and forgetting then would reopen a paid session for a second payment.
 */
export async function confirmPendingPayment(
  store: Kysely<Database>,
  params: { payment: Payment; where: PendingWhereabouts; network: NetworkConfig; head: bigint; now?: number },
): Promise<"settled" | "pending" | "reorged"> {
  const now = params.now ?? Date.now();
  const { payment, where } = params;
  const { sessionId } = payment;
  if (where.kind === "gone") {
    await store.transaction().execute(async (trx) => {
      if (!(await forgetPendingPayment(trx, payment)) || sessionId === null) return;
      const session = await getSession(trx, sessionId);
      if (session.status === "payment_pending") await moveSession(trx, { session, transition: "reopen", now });
    });
    return "reorged";
  }
  // Still paying: its confirmations count from the block it is in now.
  if (where.kind === "moved") {
    await relocatePayment(store, { payment, block: { number: where.blockNumber, hash: where.blockHash }, now });
    return "pending";
  }
  // Only the index settles: a transfer the index does not hold waits for it.
  if (where.kind === "not_indexed") return "pending";
  const confirmations = confirmationsOf(payment, params.head);
  if (confirmations < params.network.confirmations) return "pending";
  await store.transaction().execute(async (trx) => {
    const current = await findPayment(trx, payment);
    if (current?.status !== "pending") return;
    if (!(await movePayment(trx, { payment: current, transition: "confirm", now })) || sessionId === null) return;
    let session = await getSession(trx, sessionId);
    if (session.status === "payment_pending" && (await moveSession(trx, { session, transition: "confirm", now }))) {
      session = { ...session, status: "settled" };
    }
    const settled = { ...current, status: "settled" as const };
    if (!(await settleOrder(trx, { session, payment: settled, network: params.network, confirmations, now }))) {
      await flagDuplicate(trx, { payment: settled, session, network: params.network, now });
    }
  });
  return "settled";
}

export async function settleOrder(
  trx: Kysely<Database>,
  params: {
    session: CheckoutSession;
    payment: Payment;
    network: NetworkConfig;
    confirmations: number;
    now: number;
    /** Set when an unresolved payment was credited by hand (by its partner or an administrator). */
    resolution?: "attached";
  },
) {
  const { session, payment, network, now } = params;
  if (!(await creditOrder(trx, { orderId: session.orderId, sessionId: session.id, now }))) return false;
  const order = await getOrder(trx, session.orderId);
  if (session.certificateEnabled && network.certificate !== undefined) {
    await createCertificate(trx, {
      orderId: order.id,
      purchaseId: order.purchaseId,
      chainId: network.chainId,
      contract: network.certificate,
      now,
    });
  }
  // The partner's automatic cashback (docs/rewards.md), in the settlement's own transaction.
  const cashback = await grantCashbackAtSettlement(trx, {
    order,
    amountPaid: payment.amount,
    network,
    token: session.tokenAddress,
    now,
  });
  await recordEvent(trx, {
    partnerId: session.partnerId,
    type: "purchase.settled",
    orderingKey: order.id,
    now,
    data: {
      externalOrderId: session.externalOrderId,
      orderId: order.id,
      purchaseId: order.purchaseId,
      sessionId: session.id,
      transactionHash: payment.transactionHash,
      logIndex: payment.logIndex,
      network: network.name,
      chainId: network.chainId,
      blockNumber: payment.blockNumber.toString(),
      confirmations: params.confirmations,
      payer: payment.from,
      recipient: payment.to,
      tokenAddress: session.tokenAddress,
      totalPriceUsdc: session.totalPriceUsdc.toString(),
      amountPaid: payment.amount.toString(),
      certificate: { enabled: session.certificateEnabled },
      ...(cashback === undefined ? {} : { rewardIds: [cashback.id] }),
      settledAt: new Date(now).toISOString(),
      ...(params.resolution === undefined ? {} : { resolution: params.resolution }),
      // An attached payment may be below the total: the partner decided to accept it.
      ...(payment.amount < session.totalPriceUsdc ? { underpaid: true } : {}),
    },
  });
  // Other sessions of this order can no longer be paid.
  const others = await openSessionsOfOrder(trx, order.id);
  for (const other of others) {
    if (other.id !== session.id) await expireSession(trx, { session: other, now, reason: "order_settled" });
  }
  return true;
}

/**
 * A payment that would credit an order another payment already credited: it stays
 * on record as unresolved (`duplicate_payment`, to be refunded), its session closes
 * (unless it is the very session that settled the order), and the partner hears
 * `payment.unresolved`, never a second `purchase.settled`.
 */
async function flagDuplicate(
  trx: Kysely<Database>,
  params: { payment: Payment; session: CheckoutSession; network: NetworkConfig; now: number },
): Promise<Payment> {
  const { session, now } = params;
  const payment: Payment = { ...params.payment, status: "unresolved", reason: "duplicate_payment", updatedAt: now };
  await movePayment(trx, { payment: params.payment, transition: "reject_duplicate", now, set: { reason: payment.reason } });
  if (session.status === "payment_pending" || session.status === "settled") {
    await moveSession(trx, { session, transition: "reject_duplicate", now });
  }
  await recordUnresolvedEvent(trx, { payment, session, network: params.network, now });
  return payment;
}

export async function recordUnresolvedEvent(
  trx: Kysely<Database>,
  params: { payment: Payment; session: CheckoutSession | undefined; network: NetworkConfig; now: number },
) {
  const { payment, session } = params;
  const order = session ? await findOrder(trx, session.orderId) : undefined;
  await recordEvent(trx, {
    partnerId: payment.partnerId as string,
    type: "payment.unresolved",
    orderingKey: order?.id ?? logKey(payment),
    now: params.now,
    data: {
      externalOrderId: session?.externalOrderId,
      orderId: order?.id,
      purchaseId: order?.purchaseId,
      sessionId: session?.id,
      transactionHash: payment.transactionHash,
      logIndex: payment.logIndex,
      network: params.network.name,
      chainId: payment.chainId,
      reason: payment.reason,
      payer: payment.from,
      recipient: payment.to,
      amount: payment.amount.toString(),
      expectedAmount: session?.amountDue.toString(),
    },
  });
}
