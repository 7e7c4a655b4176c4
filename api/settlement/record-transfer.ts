import type { Kysely } from "kysely";
import { createCertificate } from "../certificates/certificate-record.js";
import { holdReferenceForLateWindow } from "../checkout/amount-reference.js";
import { expireSession } from "../checkout/create-session.js";
import { checksum } from "../checksum-address.js";
import type { NetworkConfig } from "../config/networks.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { recordEvent } from "../outbox/record-event.js";
import type { CheckoutSessionTable, Database, PaymentTable } from "../store/database.js";

/** Why a transfer that reached a payment address did not settle a session (SPEC section 5, and ours). */
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
  | { kind: "match"; session: CheckoutSessionTable }
  | { kind: "unresolved"; reason: UnresolvedReason; session: CheckoutSessionTable | undefined };

export function confirmationsOf(transfer: { blockNumber: bigint }, head: bigint): number {
  return head < transfer.blockNumber ? 0 : Number(head - transfer.blockNumber + 1n);
}

/**
 * Which session a transfer pays, read from the transfer alone: the exact amount
 * on that address is the reference; the payer (RWA), the session's lifetime and
 * the order's state decide whether it may settle.
 */
export async function decideTransfer(trx: Kysely<Database>, transfer: IndexedTransfer): Promise<TransferDecision> {
  const reservation = await trx
    .selectFrom("amount_reservation")
    .select(["session_id", "released_at"])
    .where("chain_id", "=", transfer.chainId)
    .where("payment_address", "=", transfer.to)
    .where("amount_due", "=", transfer.value.toString())
    .executeTakeFirst();
  if (reservation === undefined) return { kind: "unresolved", reason: "unmatched", session: undefined };
  const minedAtMs = Number(transfer.blockTimestamp) * 1000;
  const session = await trx
    .selectFrom("checkout_session")
    .selectAll()
    .where("id", "=", reservation.session_id)
    .executeTakeFirstOrThrow();

  // Past the late window the amount no longer names this session; it is still late.
  if (minedAtMs > Number(session.late_until)) return { kind: "unresolved", reason: "late", session: undefined };
  // The session ended unused and its reference was released: the amount names no session any more.
  if (minedAtMs > Number(reservation.released_at)) return { kind: "unresolved", reason: "unmatched", session: undefined };
  if (session.required_payer !== null && session.required_payer !== transfer.from) {
    return { kind: "unresolved", reason: "wrong_payer", session };
  }
  // Block timestamps have whole seconds: compare with the second the session was created in.
  if (minedAtMs < Math.floor(Number(session.created_at) / 1000) * 1000) {
    return { kind: "unresolved", reason: "predates_session", session };
  }
  if (minedAtMs > Number(session.expires_at)) return { kind: "unresolved", reason: "late", session };
  // One order, one credit: a payment of any of the order's sessions (a superseded one
  // paid before the supersede, say) that is settled or still confirming makes this
  // transfer a duplicate, kept for a refund.
  const order = await trx
    .selectFrom("orders")
    .select("settled_session_id")
    .where("id", "=", session.order_id)
    .executeTakeFirstOrThrow();
  const paying = await trx
    .selectFrom("checkout_session")
    .select("id")
    .where("order_id", "=", session.order_id)
    .where("status", "in", ["payment_pending", "settled"])
    .executeTakeFirst();
  if (order.settled_session_id !== null || paying !== undefined) {
    return { kind: "unresolved", reason: "duplicate_payment", session };
  }
  return { kind: "match", session };
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
): Promise<PaymentTable> {
  const { transfer, network } = params;
  const now = params.now ?? Date.now();
  return store.transaction().execute(async (trx) => {
    const existing = await findPayment(trx, transfer);
    if (existing !== undefined) return existing;

    const decision = await decideTransfer(trx, transfer);
    const confirmations = confirmationsOf(transfer, params.head);
    const owner = await trx
      .selectFrom("payment_address")
      .select("partner_id")
      .where("chain_id", "=", transfer.chainId)
      .where("address", "=", transfer.to)
      .executeTakeFirst();
    const payment: PaymentTable = {
      chain_id: transfer.chainId,
      transaction_hash: transfer.transactionHash,
      log_index: transfer.logIndex,
      partner_id: decision.session?.partner_id ?? owner?.partner_id ?? null,
      session_id: decision.session?.id ?? null,
      status: decision.kind === "unresolved" ? "unresolved" : confirmations >= network.confirmations ? "settled" : "pending",
      reason: decision.kind === "unresolved" ? decision.reason : null,
      from_address: transfer.from,
      to_address: transfer.to,
      amount: transfer.value.toString(),
      block_number: Number(transfer.blockNumber),
      block_hash: transfer.blockHash,
      block_timestamp: Number(transfer.blockTimestamp),
      resolution: null,
      created_at: now,
      updated_at: now,
    };
    // Another process may have recorded it since we looked: its row stands.
    const inserted = await trx
      .insertInto("payment")
      .values(payment)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    if (inserted.numInsertedOrUpdatedRows !== 1n) return (await findPayment(trx, transfer)) as PaymentTable;
    // A session that saw a transfer may see another (a duplicate, a top-up): its reference stays its own.
    if (decision.session !== undefined) await holdReferenceForLateWindow(trx, decision.session);

    if (decision.kind === "unresolved") {
      if (payment.partner_id !== null) await recordUnresolvedEvent(trx, { payment, session: decision.session, network, now });
      return payment;
    }
    const moved = await trx
      .updateTable("checkout_session")
      .set({ status: payment.status === "settled" ? "settled" : "payment_pending", updated_at: now })
      .where("id", "=", decision.session.id)
      .where("status", "in", ["awaiting_payment", "expired"])
      .executeTakeFirst();
    if (moved.numUpdatedRows !== 1n) throw new Error(`session ${decision.session.id} changed while its payment was recorded`);
    if (
      payment.status === "settled" &&
      !(await settleOrder(trx, { session: decision.session, payment, network, confirmations, now }))
    ) {
      return flagDuplicate(trx, { payment, session: decision.session, network, now });
    }
    return payment;
  });
}

/** A pending payment whose block now has enough confirmations settles; one that was reorged away is forgotten. */
export async function confirmPendingPayment(
  store: Kysely<Database>,
  params: { payment: PaymentTable; stillIndexed: boolean; network: NetworkConfig; head: bigint; now?: number },
): Promise<"settled" | "pending" | "reorged"> {
  const now = params.now ?? Date.now();
  const { payment } = params;
  if (!params.stillIndexed) {
    await store.transaction().execute(async (trx) => {
      const removed = await trx
        .deleteFrom("payment")
        .where("chain_id", "=", payment.chain_id)
        .where("transaction_hash", "=", payment.transaction_hash)
        .where("log_index", "=", payment.log_index)
        .where("status", "=", "pending")
        .executeTakeFirst();
      if (removed.numDeletedRows !== 1n || payment.session_id === null) return;
      await trx
        .updateTable("checkout_session")
        .set({ status: "awaiting_payment", updated_at: now })
        .where("id", "=", payment.session_id)
        .where("status", "=", "payment_pending")
        .execute();
    });
    return "reorged";
  }
  const confirmations = confirmationsOf({ blockNumber: BigInt(payment.block_number) }, params.head);
  if (confirmations < params.network.confirmations) return "pending";
  await store.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable("payment")
      .set({ status: "settled", updated_at: now })
      .where("chain_id", "=", payment.chain_id)
      .where("transaction_hash", "=", payment.transaction_hash)
      .where("log_index", "=", payment.log_index)
      .where("status", "=", "pending")
      .executeTakeFirst();
    if (updated.numUpdatedRows !== 1n || payment.session_id === null) return;
    await trx
      .updateTable("checkout_session")
      .set({ status: "settled", updated_at: now })
      .where("id", "=", payment.session_id)
      .where("status", "=", "payment_pending")
      .execute();
    const session = await trx
      .selectFrom("checkout_session")
      .selectAll()
      .where("id", "=", payment.session_id)
      .executeTakeFirstOrThrow();
    const settled = { ...payment, status: "settled" as const };
    if (!(await settleOrder(trx, { session, payment: settled, network: params.network, confirmations, now }))) {
      await flagDuplicate(trx, { payment: settled, session, network: params.network, now });
    }
  });
  return "settled";
}

export async function settleOrder(
  trx: Kysely<Database>,
  params: {
    session: CheckoutSessionTable;
    payment: PaymentTable;
    network: NetworkConfig;
    confirmations: number;
    now: number;
    /** Set when an unresolved payment was credited by hand (by its partner or an administrator). */
    resolution?: "attached";
  },
) {
  const { session, payment, network, now } = params;
  // The guard is the last word on "one order, one credit", also between processes: a
  // concurrent settlement of the same order waits on the row and then finds it paid.
  const credited = await trx
    .updateTable("orders")
    .set({ status: "paid", settled_session_id: session.id, updated_at: now })
    .where("id", "=", session.order_id)
    .where("settled_session_id", "is", null)
    .executeTakeFirst();
  if (credited.numUpdatedRows !== 1n) return false;
  const order = await trx.selectFrom("orders").selectAll().where("id", "=", session.order_id).executeTakeFirstOrThrow();
  if (session.certificate_enabled === 1 && network.certificate !== undefined) {
    await createCertificate(trx, {
      orderId: order.id,
      purchaseId: order.purchase_id,
      chainId: network.chainId,
      contract: network.certificate,
      now,
    });
  }
  await recordEvent(trx, {
    partnerId: session.partner_id,
    type: "purchase.settled",
    orderingKey: order.id,
    now,
    data: {
      externalOrderId: session.external_order_id,
      orderId: order.id,
      purchaseId: order.purchase_id,
      sessionId: session.id,
      transactionHash: payment.transaction_hash,
      logIndex: payment.log_index,
      network: network.name,
      chainId: network.chainId,
      blockNumber: String(payment.block_number),
      confirmations: params.confirmations,
      payer: checksum(payment.from_address),
      recipient: checksum(payment.to_address),
      tokenAddress: checksum(session.token_address),
      totalPriceUsdc: session.total_price_usdc,
      amountPaid: payment.amount,
      certificate: { enabled: session.certificate_enabled === 1 },
      settledAt: new Date(now).toISOString(),
      ...(params.resolution === undefined ? {} : { resolution: params.resolution }),
      // An attached payment may be below the total: the partner decided to accept it.
      ...(BigInt(payment.amount) < BigInt(session.total_price_usdc) ? { underpaid: true } : {}),
    },
  });
  // Other sessions of this order can no longer be paid.
  const others = await trx
    .selectFrom("checkout_session")
    .selectAll()
    .where("order_id", "=", order.id)
    .where("id", "!=", session.id)
    .where("status", "=", "awaiting_payment")
    .execute();
  for (const other of others) await expireSession(trx, { session: other, now, reason: "order_settled" });
  return true;
}

/**
 * A payment that would credit an order another payment already credited: it stays
 * on record as unresolved (`duplicate_payment`, to be refunded), its session closes,
 * and the partner hears `payment.unresolved`, never a second `purchase.settled`.
 */
async function flagDuplicate(
  trx: Kysely<Database>,
  params: { payment: PaymentTable; session: CheckoutSessionTable; network: NetworkConfig; now: number },
): Promise<PaymentTable> {
  const { session, now } = params;
  const payment: PaymentTable = { ...params.payment, status: "unresolved", reason: "duplicate_payment", updated_at: now };
  await trx
    .updateTable("payment")
    .set({ status: payment.status, reason: payment.reason, updated_at: now })
    .where("chain_id", "=", payment.chain_id)
    .where("transaction_hash", "=", payment.transaction_hash)
    .where("log_index", "=", payment.log_index)
    .execute();
  await trx
    .updateTable("checkout_session")
    .set({ status: "expired", updated_at: now })
    .where("id", "=", session.id)
    .where("status", "in", ["payment_pending", "settled"])
    .execute();
  await recordUnresolvedEvent(trx, { payment, session, network: params.network, now });
  return payment;
}

export async function recordUnresolvedEvent(
  trx: Kysely<Database>,
  params: { payment: PaymentTable; session: CheckoutSessionTable | undefined; network: NetworkConfig; now: number },
) {
  const { payment, session } = params;
  const order = session
    ? await trx.selectFrom("orders").select(["id", "purchase_id"]).where("id", "=", session.order_id).executeTakeFirst()
    : undefined;
  await recordEvent(trx, {
    partnerId: payment.partner_id as string,
    type: "payment.unresolved",
    orderingKey: order?.id ?? `${payment.chain_id}:${payment.transaction_hash}:${payment.log_index}`,
    now: params.now,
    data: {
      externalOrderId: session?.external_order_id,
      orderId: order?.id,
      purchaseId: order?.purchase_id,
      sessionId: session?.id,
      transactionHash: payment.transaction_hash,
      logIndex: payment.log_index,
      network: params.network.name,
      chainId: payment.chain_id,
      reason: payment.reason,
      payer: checksum(payment.from_address),
      recipient: checksum(payment.to_address),
      amount: payment.amount,
      expectedAmount: session?.amount_due,
    },
  });
}

export function findPayment(db: Kysely<Database>, key: { chainId: number; transactionHash: string; logIndex: number }) {
  return db
    .selectFrom("payment")
    .selectAll()
    .where("chain_id", "=", key.chainId)
    .where("transaction_hash", "=", key.transactionHash)
    .where("log_index", "=", key.logIndex)
    .executeTakeFirst();
}
