import type { Kysely } from "kysely";
import type { Address, Hex } from "viem";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { RefundReason, RefundStatus, RefundTable } from "../store/refund-tables.js";
import { type InputField, planMove, type TransitionTable } from "../store/transition-table.js";
import { checksum } from "../values/checksum-address.js";
import { logKey } from "../values/log-key.js";

/**
 * The refund record (SPEC 15, docs/refunds.md): every query of `refund` and of its
 * guard `refund_allowance` lives here, each write inside the caller's transaction.
 */
export type RefundRow = RefundTable;

export type PaymentRef = { chainId: number; transactionHash: Hex; logIndex: number };

/** A refund as the domain reads it: bigint money and blocks, EIP-55 addresses, epoch-ms instants. */
export type Refund = {
  id: string;
  partnerId: string;
  orderId: string | null;
  payment: PaymentRef;
  /** `order`: the payment credited `orderId`; `payment`: an unresolved payment is sent back. */
  subject: "order" | "payment";
  chainId: number;
  tokenAddress: Address;
  /** The payment address that received the money; the refund leaves from it. */
  from: Address;
  payer: Address;
  amount: bigint;
  reason: RefundReason;
  note: string | null;
  destination: Address | null;
  status: RefundStatus;
  readyAt: number | null;
  /**
   * The indexed head when it became ready: a transfer completes it only from a later
   * block (the chain's clock, not the service's). Null before it is ready, and for a
   * refund ready before migration 0018.
   */
  readyBlock: bigint | null;
  transfer: { transactionHash: Hex; logIndex: number; blockNumber: bigint; blockHash: Hex } | null;
  createdAt: number;
  updatedAt: number;
  succeededAt: number | null;
  cancelledAt: number | null;
};

const hexOf = (value: string): Hex => value as Hex;

export function toRefund(row: RefundRow): Refund {
  return {
    id: row.id,
    partnerId: row.partner_id,
    orderId: row.order_id,
    payment: {
      chainId: Number(row.payment_chain_id),
      transactionHash: hexOf(row.payment_transaction_hash),
      logIndex: Number(row.payment_log_index),
    },
    subject: row.subject,
    chainId: Number(row.payment_chain_id),
    tokenAddress: checksum(row.token_address),
    from: checksum(row.from_address),
    payer: checksum(row.payer_address),
    amount: BigInt(row.amount),
    reason: row.reason,
    note: row.note,
    destination: row.destination === null ? null : checksum(row.destination),
    status: row.status,
    readyAt: row.ready_at === null ? null : Number(row.ready_at),
    readyBlock: row.ready_block === null ? null : BigInt(row.ready_block),
    transfer:
      row.transfer_transaction_hash === null
        ? null
        : {
            transactionHash: hexOf(row.transfer_transaction_hash),
            logIndex: Number(row.transfer_log_index),
            blockNumber: BigInt(row.transfer_block_number ?? 0),
            blockHash: hexOf(row.transfer_block_hash ?? "0x"),
          },
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    succeededAt: row.succeeded_at === null ? null : Number(row.succeeded_at),
    cancelledAt: row.cancelled_at === null ? null : Number(row.cancelled_at),
  };
}

function toRefundRow(refund: Refund, tokenHash: string | null): RefundRow {
  return {
    id: refund.id,
    partner_id: refund.partnerId,
    order_id: refund.orderId,
    payment_chain_id: refund.payment.chainId,
    payment_transaction_hash: refund.payment.transactionHash.toLowerCase(),
    payment_log_index: refund.payment.logIndex,
    subject: refund.subject,
    token_address: refund.tokenAddress.toLowerCase(),
    from_address: refund.from.toLowerCase(),
    payer_address: refund.payer.toLowerCase(),
    amount: refund.amount.toString(),
    reason: refund.reason,
    note: refund.note,
    destination: refund.destination?.toLowerCase() ?? null,
    status: refund.status,
    token_hash: tokenHash,
    ready_at: refund.readyAt,
    ready_block: refund.readyBlock === null ? null : Number(refund.readyBlock),
    test_send_claimed_at: null,
    transfer_transaction_hash: null,
    transfer_log_index: null,
    transfer_block_number: null,
    transfer_block_hash: null,
    created_at: refund.createdAt,
    updated_at: refund.updatedAt,
    succeeded_at: null,
    cancelled_at: null,
  };
}

/**
 * A refund's legal status changes. `pending` and `succeeded` follow from the index
 * only (an outgoing transfer that matches); the partner can only cancel before that.
 */
export const refundTransitions = {
  /** The customer (refund page) or the partner named the receiving address. */
  set_destination: {
    from: ["awaiting_destination"],
    to: "ready",
    guard: "destination IS NULL",
    /** `readyBlock`: the indexed head now (see `Refund.readyBlock`). */
    set: (input: { destination: Address; readyBlock: bigint }, _refund: unknown, now: number) => ({
      destination: input.destination.toLowerCase(),
      ready_at: now,
      ready_block: Number(input.readyBlock),
    }),
  },
  /** A matching outgoing transfer is in the index, not yet final. */
  see_transfer: {
    from: ["ready"],
    to: "pending",
    guard: "the transfer matches (SPEC 15) and no other refund holds it (unique key)",
    set: (transfer: SeenTransfer) => ({
      transfer_transaction_hash: transfer.transactionHash.toLowerCase(),
      transfer_log_index: transfer.logIndex,
      transfer_block_number: Number(transfer.blockNumber),
      transfer_block_hash: transfer.blockHash.toLowerCase(),
    }),
  },
  /** Its transfer has the network's confirmations. */
  succeed: {
    from: ["pending"],
    to: "succeeded",
    set: (_input: unknown, _refund: unknown, now: number) => ({ succeeded_at: now }),
  },
  /** Its transfer left the chain (a reorg): it waits for a transfer again. */
  reorg: {
    from: ["pending", "succeeded"],
    to: "ready",
    guard: "the transfer it held is gone from the index and the chain",
    set: () => ({
      transfer_transaction_hash: null,
      transfer_log_index: null,
      transfer_block_number: null,
      transfer_block_hash: null,
      succeeded_at: null,
    }),
  },
  /** By the partner, before any money moved; the amount is refundable again. */
  cancel: {
    from: ["awaiting_destination", "ready"],
    to: "cancelled",
    set: (_input: unknown, _refund: unknown, now: number) => ({ cancelled_at: now }),
  },
} as const satisfies TransitionTable<RefundStatus, string, RefundRow>;

/** The outgoing transfer a refund holds once `see_transfer` matched it. */
type SeenTransfer = { transactionHash: Hex; logIndex: number; blockNumber: bigint; blockHash: Hex };

export type RefundTransition = keyof typeof refundTransitions;

export async function findRefund(db: Kysely<Database>, refundId: string): Promise<Refund | undefined> {
  const row = await db.selectFrom("refund").selectAll().where("id", "=", refundId).executeTakeFirst();
  return row === undefined ? undefined : toRefund(row);
}

/** The refunds named, by id (the ledger names each refund's order and reason). */
export async function refundsByIds(db: Kysely<Database>, refundIds: readonly string[]): Promise<Map<string, Refund>> {
  if (refundIds.length === 0) return new Map();
  const rows = await db
    .selectFrom("refund")
    .selectAll()
    .where("id", "in", [...new Set(refundIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, toRefund(row)]));
}

/** The refund whose customer token hashes to `tokenHash`, if any. */
export async function refundOfTokenHash(db: Kysely<Database>, tokenHash: string): Promise<Refund | undefined> {
  const row = await db.selectFrom("refund").selectAll().where("token_hash", "=", tokenHash).executeTakeFirst();
  return row === undefined ? undefined : toRefund(row);
}

/** Every refund of a payment, oldest first. */
export async function refundsOfPayment(db: Kysely<Database>, payment: PaymentRef): Promise<Refund[]> {
  const rows = await db
    .selectFrom("refund")
    .selectAll()
    .where("payment_chain_id", "=", payment.chainId)
    .where("payment_transaction_hash", "=", payment.transactionHash.toLowerCase())
    .where("payment_log_index", "=", payment.logIndex)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(toRefund);
}

/** The refunds of these orders that send back the payment crediting them (`subject = order`), by order. */
export async function orderRefunds(db: Kysely<Database>, orderIds: readonly string[]): Promise<Map<string, Refund[]>> {
  const byOrder = new Map<string, Refund[]>();
  if (orderIds.length === 0) return byOrder;
  const rows = await db
    .selectFrom("refund")
    .selectAll()
    .where("order_id", "in", [...new Set(orderIds)])
    .where("subject", "=", "order")
    .execute();
  for (const row of rows.map(toRefund)) {
    const list = byOrder.get(row.orderId as string) ?? [];
    list.push(row);
    byOrder.set(row.orderId as string, list);
  }
  return byOrder;
}

/** Records a new refund with the hash of its customer token (none when its destination is known). */
export async function insertRefund(trx: Kysely<Database>, params: { refund: Refund; tokenHash: string | null }): Promise<void> {
  assertInTransaction(trx, "refund");
  await trx.insertInto("refund").values(toRefundRow(params.refund, params.tokenHash)).execute();
}

/** A new customer token for a refund still waiting for its destination (the previous one stops working). */
export async function replaceRefundToken(
  trx: Kysely<Database>,
  params: { refundId: string; tokenHash: string; now: number },
): Promise<boolean> {
  assertInTransaction(trx, "refund");
  const result = await trx
    .updateTable("refund")
    .set({ token_hash: params.tokenHash, updated_at: params.now })
    .where("id", "=", params.refundId)
    .where("status", "=", "awaiting_destination")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * Applies `transition` to a refund read in this transaction. Throws `TransitionRefused`
 * when the table does not allow it from the status read; answers false when the row
 * moved meanwhile (another request, another process), or when `see_transfer`'s
 * transfer is already another refund's.
 */
export async function moveRefund<name extends RefundTransition>(
  trx: Kysely<Database>,
  params: { refund: Pick<Refund, "id" | "status">; transition: name; now: number } & InputField<(typeof refundTransitions)[name]>,
): Promise<boolean> {
  assertInTransaction(trx, "refund");
  const { refund, transition, now } = params;
  const move = planMove<RefundStatus, RefundTransition, RefundRow>("refund", refundTransitions, transition, {
    current: refund.status,
    input: params.input,
    now,
  });
  if (move.refused !== undefined) return false;
  let update = trx
    .updateTable("refund")
    .set({ ...move.set, status: move.to, updated_at: now })
    .where("id", "=", refund.id)
    .where("status", "=", refund.status);
  if (transition === "set_destination") update = update.where("destination", "is", null);
  if (transition === "see_transfer") {
    // "Never used by another refund": the unique key would refuse it too; saying so here keeps the transaction alive.
    const transfer = params.input as SeenTransfer;
    update = update.where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("refund as other")
            .select("other.id")
            .where("other.transfer_transaction_hash", "=", transfer.transactionHash.toLowerCase())
            .where("other.transfer_log_index", "=", transfer.logIndex),
        ),
      ),
    );
  }
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * Claims the one send of "Send with the test account" for a ready refund: a guarded
 * `UPDATE … WHERE test_send_claimed_at IS NULL`, so of concurrent requests (in one
 * process or several, SQLite or Postgres) one wins. Answers whether this call won.
 */
export async function claimTestSend(trx: Kysely<Database>, params: { refundId: string; now: number }): Promise<boolean> {
  assertInTransaction(trx, "refund");
  const result = await trx
    .updateTable("refund")
    .set({ test_send_claimed_at: params.now, updated_at: params.now })
    .where("id", "=", params.refundId)
    .where("status", "=", "ready")
    .where("test_send_claimed_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Gives back a claim whose send never reached the chain (the node refused it), so it may be tried again. */
export async function releaseTestSend(
  trx: Kysely<Database>,
  params: { refundId: string; claimedAt: number; now: number },
): Promise<void> {
  assertInTransaction(trx, "refund");
  await trx
    .updateTable("refund")
    .set({ test_send_claimed_at: null, updated_at: params.now })
    .where("id", "=", params.refundId)
    .where("test_send_claimed_at", "=", params.claimedAt)
    .execute();
}

/** A transfer re-mined in another block by a reorg: the refund keeps it, with its new block. */
export async function relocateRefundTransfer(
  trx: Kysely<Database>,
  params: { refundId: string; block: { number: bigint; hash: Hex }; now: number },
): Promise<void> {
  assertInTransaction(trx, "refund");
  await trx
    .updateTable("refund")
    .set({
      transfer_block_number: Number(params.block.number),
      transfer_block_hash: params.block.hash.toLowerCase(),
      updated_at: params.now,
    })
    .where("id", "=", params.refundId)
    .where("transfer_transaction_hash", "is not", null)
    .execute();
}

/** The ready refunds a transfer from one of a partner's addresses on this chain could complete, oldest first. */
export async function readyRefundsOfPartner(
  db: Kysely<Database>,
  params: { partnerId: string; chainId: number },
): Promise<Refund[]> {
  const rows = await db
    .selectFrom("refund")
    .selectAll()
    .where("partner_id", "=", params.partnerId)
    .where("payment_chain_id", "=", params.chainId)
    .where("status", "=", "ready")
    .orderBy("ready_at")
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(toRefund);
}

/** Refunds whose transfer was seen and is not final yet, on a chain. */
export async function pendingRefunds(db: Kysely<Database>, params: { chainId: number; limit: number }): Promise<Refund[]> {
  const rows = await db
    .selectFrom("refund")
    .selectAll()
    .where("status", "=", "pending")
    .where("payment_chain_id", "=", params.chainId)
    .orderBy("created_at")
    .limit(params.limit)
    .execute();
  return rows.map(toRefund);
}

/**
 * A partner's refunds, newest first, after `after` when given, filtered by order, payment and status;
 * `take` rows at most.
 */
export async function refundsPage(
  db: Kysely<Database>,
  params: {
    partnerId: string;
    orderId?: string;
    payment?: PaymentRef;
    status?: RefundStatus;
    after?: { createdAt: number; id: string };
    take: number;
  },
): Promise<Refund[]> {
  let select = db.selectFrom("refund").selectAll().where("partner_id", "=", params.partnerId);
  if (params.orderId !== undefined) select = select.where("order_id", "=", params.orderId);
  if (params.payment !== undefined)
    select = select
      .where("payment_chain_id", "=", params.payment.chainId)
      .where("payment_transaction_hash", "=", params.payment.transactionHash.toLowerCase())
      .where("payment_log_index", "=", params.payment.logIndex);
  if (params.status !== undefined) select = select.where("status", "=", params.status);
  const after = params.after;
  if (after !== undefined) {
    select = select.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), "<", tuple(after.createdAt, after.id)));
  }
  const rows = await select.orderBy("created_at", "desc").orderBy("id", "desc").limit(params.take).execute();
  return rows.map(toRefund);
}

// The guard of the refunded sum.

/** The sum of a payment's live refunds as its guard row holds it (0 before its first refund). */
async function committedOf(db: Kysely<Database>, paymentKey: string) {
  const row = await db
    .selectFrom("refund_allowance")
    .select(["committed", "fully_refunded_at"])
    .where("payment_key", "=", paymentKey)
    .executeTakeFirst();
  return row === undefined ? undefined : { committed: BigInt(row.committed), fullyRefundedAt: row.fully_refunded_at };
}

/** How often a compare-and-set of the guard is retried after another writer changed it first. */
const ALLOWANCE_ATTEMPTS = 50;

/**
 * Adds `delta` (negative for a cancel) to the sum of a payment's live refunds, if the
 * sum stays within [0, paid]: one compare-and-set `UPDATE … WHERE committed = <read>`,
 * so two transactions that read the same sum cannot both add to it. On SQLite the
 * write transactions of the store are serial; on Postgres the loser's UPDATE waits for
 * the winner's commit, finds the row changed and matches nothing: it reads the new
 * sum (READ COMMITTED shows it) and tries again. Answers the sum before the change,
 * or undefined when the change does not fit.
 */
export async function changeCommittedRefunds(
  trx: Kysely<Database>,
  params: { payment: PaymentRef; paid: bigint; delta: bigint; now: number },
): Promise<{ before: bigint } | undefined> {
  assertInTransaction(trx, "refund_allowance");
  const key = logKey(params.payment);
  for (let attempt = 0; attempt < ALLOWANCE_ATTEMPTS; attempt++) {
    const current = await committedOf(trx, key);
    const before = current?.committed ?? 0n;
    const after = before + params.delta;
    // A release (negative delta) only has to stay above zero: the cap binds what is added.
    if (after < 0n || (params.delta > 0n && after > params.paid)) return undefined;
    if (current === undefined) {
      const inserted = await trx
        .insertInto("refund_allowance")
        .values({ payment_key: key, committed: after.toString(), fully_refunded_at: null, updated_at: params.now })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 1n) return { before };
      continue;
    }
    const updated = await trx
      .updateTable("refund_allowance")
      .set({ committed: after.toString(), updated_at: params.now })
      .where("payment_key", "=", key)
      .where("committed", "=", before.toString())
      .executeTakeFirst();
    if (updated.numUpdatedRows === 1n) return { before };
  }
  throw new Error(`refund allowance of ${key} kept changing`);
}

/** Marks a payment's order fully refunded (once); answers whether this call marked it. */
export async function markFullyRefunded(trx: Kysely<Database>, params: { payment: PaymentRef; now: number }): Promise<boolean> {
  assertInTransaction(trx, "refund_allowance");
  const result = await trx
    .updateTable("refund_allowance")
    .set({ fully_refunded_at: params.now, updated_at: params.now })
    .where("payment_key", "=", logKey(params.payment))
    .where("fully_refunded_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Of these orders, those whose crediting payment was refunded in full (a certificate of theirs is revoked). */
export async function fullyRefundedOrderIds(db: Kysely<Database>, orderIds: readonly string[]): Promise<Set<string>> {
  const refunds = await orderRefunds(db, orderIds);
  const orderOfKey = new Map<string, string>();
  for (const [orderId, list] of refunds) for (const refund of list) orderOfKey.set(logKey(refund.payment), orderId);
  if (orderOfKey.size === 0) return new Set();
  const rows = await db
    .selectFrom("refund_allowance")
    .select("payment_key")
    .where("payment_key", "in", [...orderOfKey.keys()])
    .where("fully_refunded_at", "is not", null)
    .execute();
  return new Set(rows.map((row) => orderOfKey.get(row.payment_key) as string));
}
