import type { Kysely } from "kysely";
import type { Address, Hex } from "viem";
import type { Database, PaymentStatus, PaymentTable } from "../store/database.js";
import { type StoredTransfer, storedTransferColumns, toStoredTransfer } from "../store/stored-transfer.js";
import { ruleFor, type TransitionTable } from "../store/transition-table.js";
import { type LogKey, logKey } from "../values/log-key.js";

/**
 * The payment record: one row per indexed transfer to a payment address, keyed by
 * (chain, transaction hash, log index), which is also the replay guard. Every write
 * of `payment` goes through this module, inside the caller's transaction.
 */
export type PaymentRow = PaymentTable;

/**
 * A payment as the domain reads it: money and block numbers as bigint, addresses in
 * EIP-55 checksum case, instants as epoch milliseconds. The store keeps addresses and
 * hashes lower case; only this module reads or writes them in that form.
 */
export type Payment = StoredTransfer & {
  partnerId: string | null;
  sessionId: string | null;
  status: PaymentStatus;
  reason: string | null;
  resolution: string | null;
  createdAt: number;
  updatedAt: number;
};

/**
 * The resolution of a payment the subscription worker recorded for a paid charge
 * (api/subscriptions/charge-order.ts): settled like a matched payment, filed in the
 * books as `subscription_charge` (api/accounting/ledger-rules.ts).
 */
export const SUBSCRIPTION_CHARGE_RESOLUTION = "subscription_charge";

/** The store holds hashes as the index wrote them: lower-case 0x-hex. */
const hexOf = (value: string): Hex => value as Hex;

export function toPayment(row: PaymentRow): Payment {
  return {
    ...toStoredTransfer(row),
    partnerId: row.partner_id,
    sessionId: row.session_id,
    status: row.status,
    reason: row.reason,
    resolution: row.resolution,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A new payment as the store keeps it: addresses and hashes lower case, the block's time in seconds. */
function toPaymentRow(payment: Payment): PaymentRow {
  return {
    ...storedTransferColumns(payment),
    partner_id: payment.partnerId,
    session_id: payment.sessionId,
    status: payment.status,
    reason: payment.reason,
    resolution: payment.resolution,
    created_at: payment.createdAt,
    updated_at: payment.updatedAt,
  };
}

/**
 * A payment's legal status changes. A `pending` payment whose transaction the chain
 * dropped before it confirmed is deleted (`forgetPendingPayment`), not moved: it may
 * come back as a new fact.
 */
export const paymentTransitions = {
  /** Its block reached the network's confirmations. */
  confirm: { from: ["pending"], to: "settled" },
  /** It would credit an order another payment already credited: kept for a refund. */
  reject_duplicate: { from: ["pending", "settled"], to: "unresolved", guard: "reason becomes duplicate_payment" },
  /** Its partner (or an admin on its behalf) credits it to one of the partner's orders. */
  attach: {
    from: ["unresolved"],
    to: "attached",
    guard: "the order belongs to the partner owning the receiving address, has no settled session and no payment confirming",
  },
  /** Its partner (or an admin) will send it back; the service never moves money. */
  request_refund: { from: ["unresolved"], to: "refund_requested" },
  /** A submitted transfer of the wrong amount, recorded as unmatched before, is linked to the session it was submitted on. */
  link_to_session: { from: ["unresolved"], to: "unresolved", guard: "session_id IS NULL and reason is unmatched" },
  /** A credited transfer that a reorg took off the chain. */
  reorg: { from: ["settled", "attached"], to: "reorged" },
  /** Back on the chain (possibly in another block), credited as before. */
  restore_settled: { from: ["reorged"], to: "settled", guard: "it was settled by the matcher" },
  restore_attached: { from: ["reorged"], to: "attached", guard: "its resolution says it was attached" },
} as const satisfies TransitionTable<PaymentStatus>;

export type PaymentTransition = keyof typeof paymentTransitions;

/** A payment's key; the transaction hash in any case (the store keeps lower case). */
export type PaymentKey = { chainId: number; transactionHash: string; logIndex: number };

const keyOf = (payment: PaymentKey): PaymentKey => ({
  chainId: payment.chainId,
  transactionHash: payment.transactionHash.toLowerCase(),
  logIndex: payment.logIndex,
});

export async function findPayment(db: Kysely<Database>, payment: PaymentKey): Promise<Payment | undefined> {
  const key = keyOf(payment);
  const row = await db
    .selectFrom("payment")
    .selectAll()
    .where("chain_id", "=", key.chainId)
    .where("transaction_hash", "=", key.transactionHash)
    .where("log_index", "=", key.logIndex)
    .executeTakeFirst();
  return row === undefined ? undefined : toPayment(row);
}

/** Records a transfer once; answers false when it was recorded already (by another process, say). */
export async function insertPayment(trx: Kysely<Database>, payment: Payment): Promise<boolean> {
  const inserted = await trx
    .insertInto("payment")
    .values(toPaymentRow(payment))
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return inserted.numInsertedOrUpdatedRows === 1n;
}

/**
 * Applies `transition` to a payment read in this transaction, with the columns it
 * changes beside its status. Throws `TransitionRefused` when the table does not allow
 * it from the status read; answers false when the row moved meanwhile.
 */
export async function movePayment(
  trx: Kysely<Database>,
  params: {
    payment: PaymentKey & Pick<Payment, "status">;
    transition: PaymentTransition;
    now: number;
    set?: Partial<Pick<Payment, "reason" | "resolution" | "sessionId" | "partnerId">>;
    /** The block it is mined in now (a reorg moved it). */
    block?: { number: bigint; hash: Hex };
  },
): Promise<boolean> {
  const { payment, transition } = params;
  const rule = ruleFor<PaymentStatus, PaymentTransition>("payment", paymentTransitions, transition, payment.status);
  const key = keyOf(payment);
  const block = params.block === undefined ? {} : blockColumns(params.block);
  const set = params.set ?? {};
  let update = trx
    .updateTable("payment")
    .set({
      ...("reason" in set ? { reason: set.reason } : {}),
      ...("resolution" in set ? { resolution: set.resolution } : {}),
      ...("sessionId" in set ? { session_id: set.sessionId } : {}),
      ...("partnerId" in set ? { partner_id: set.partnerId } : {}),
      ...block,
      status: rule.to,
      updated_at: params.now,
    })
    .where("chain_id", "=", key.chainId)
    .where("transaction_hash", "=", key.transactionHash)
    .where("log_index", "=", key.logIndex)
    .where("status", "=", payment.status);
  if (transition === "link_to_session") update = update.where("session_id", "is", null);
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** A pending payment whose transaction the chain dropped is forgotten; answers whether this call removed it. */
export async function forgetPendingPayment(trx: Kysely<Database>, key: PaymentKey): Promise<boolean> {
  const payment = keyOf(key);
  const removed = await trx
    .deleteFrom("payment")
    .where("chain_id", "=", payment.chainId)
    .where("transaction_hash", "=", payment.transactionHash)
    .where("log_index", "=", payment.logIndex)
    .where("status", "=", "pending")
    .executeTakeFirst();
  return removed.numDeletedRows === 1n;
}

const blockColumns = (block: { number: bigint; hash: Hex }) => ({
  block_number: Number(block.number),
  block_hash: block.hash.toLowerCase(),
});

/** A credited or pending transfer re-mined in another block by a reorg: same status, new block. */
export async function relocatePayment(
  db: Kysely<Database>,
  params: { payment: Payment; block: { number: bigint; hash: Hex }; now: number },
): Promise<void> {
  const key = keyOf(params.payment);
  await db
    .updateTable("payment")
    .set({ ...blockColumns(params.block), updated_at: params.now })
    .where("chain_id", "=", key.chainId)
    .where("transaction_hash", "=", key.transactionHash)
    .where("log_index", "=", key.logIndex)
    .where("status", "=", params.payment.status)
    .execute();
}

/** Whether any transfer named this session (its payment reference then stays its own). */
export async function sessionSawTransfer(db: Kysely<Database>, sessionId: string): Promise<boolean> {
  const transfer = await db.selectFrom("payment").select("session_id").where("session_id", "=", sessionId).executeTakeFirst();
  return transfer !== undefined;
}

/** Of these transfers, the keys already recorded (the settlement worker skips them). */
export async function recordedKeys(
  db: Kysely<Database>,
  params: { chainId: number; transactionHashes: string[] },
): Promise<Set<LogKey>> {
  if (params.transactionHashes.length === 0) return new Set();
  const known = await db
    .selectFrom("payment")
    .select(["transaction_hash", "log_index"])
    .where("chain_id", "=", params.chainId)
    .where("transaction_hash", "in", params.transactionHashes)
    .execute();
  return new Set(
    known.map((row) => logKey({ chainId: params.chainId, transactionHash: row.transaction_hash, logIndex: row.log_index })),
  );
}

export async function pendingPayments(db: Kysely<Database>, params: { chainId: number; limit: number }): Promise<Payment[]> {
  const rows = await db
    .selectFrom("payment")
    .selectAll()
    .where("status", "=", "pending")
    .where("chain_id", "=", params.chainId)
    .limit(params.limit)
    .execute();
  return rows.map(toPayment);
}

/** Credited (or reorged) payments mined within [fromBlock, toBlock], for the reorg watch. */
export async function creditedPaymentsBetween(
  db: Kysely<Database>,
  params: { chainId: number; fromBlock: bigint; toBlock: bigint; limit: number },
): Promise<Payment[]> {
  const rows = await db
    .selectFrom("payment")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("status", "in", ["settled", "attached", "reorged"])
    .where("block_number", ">=", Number(params.fromBlock))
    .where("block_number", "<=", Number(params.toBlock))
    .limit(params.limit)
    .execute();
  return rows.map(toPayment);
}

/** For health: how many credited payments are off the chain now, and the latest of them with its order. */
export async function reorgedPayments(
  db: Kysely<Database>,
): Promise<{ count: number; last: (Payment & { orderId: string | null }) | undefined }> {
  const [count, last] = await Promise.all([
    db
      .selectFrom("payment")
      .select((eb) => eb.fn.countAll<string | number>().as("n"))
      .where("status", "=", "reorged")
      .executeTakeFirst(),
    db
      .selectFrom("payment")
      .leftJoin("checkout_session", "checkout_session.id", "payment.session_id")
      .selectAll("payment")
      .select("checkout_session.order_id")
      .where("payment.status", "=", "reorged")
      .orderBy("payment.updated_at", "desc")
      .limit(1)
      .executeTakeFirst(),
  ]);
  return {
    count: Number(count?.n ?? 0),
    last: last === undefined ? undefined : { ...toPayment(last), orderId: last.order_id },
  };
}

/** The payments that pay these sessions, pending or settled (a purchase shows its settlement). */
export async function payingPaymentsOfSessions(db: Kysely<Database>, sessionIds: readonly string[]): Promise<Payment[]> {
  if (sessionIds.length === 0) return [];
  const rows = await db
    .selectFrom("payment")
    .selectAll()
    .where("session_id", "in", [...sessionIds])
    .where("status", "in", ["pending", "settled"])
    .execute();
  return rows.map(toPayment);
}

/** The payments that credited these sessions' orders (settled or attached), for amounts paid in lists. */
export async function creditingPaymentsOfSessions(db: Kysely<Database>, sessionIds: readonly string[]): Promise<Payment[]> {
  if (sessionIds.length === 0) return [];
  const rows = await db
    .selectFrom("payment")
    .selectAll()
    .where("session_id", "in", [...sessionIds])
    .where("status", "in", ["settled", "attached"])
    .execute();
  return rows.map(toPayment);
}

/** The purchase ids (bytes32) of the orders a settled payment in this transaction paid (public verification). */
export async function purchaseIdsPaidBy(db: Kysely<Database>, transactionHash: Hex): Promise<Hex[]> {
  const rows = await db
    .selectFrom("payment")
    .innerJoin("checkout_session", "checkout_session.id", "payment.session_id")
    .innerJoin("orders", "orders.id", "checkout_session.order_id")
    .select("orders.purchase_id")
    .where("payment.transaction_hash", "=", transactionHash.toLowerCase())
    .where("payment.status", "=", "settled")
    .execute();
  return rows.map((row) => hexOf(row.purchase_id));
}

/** The recorded transfer of this hash that pays exactly `amount` to `to` (the hash submission's fast path). */
export async function recordedTransferTo(
  db: Kysely<Database>,
  params: { chainId: number; transactionHash: Hex; to: Address; amount: bigint },
): Promise<Payment | undefined> {
  const row = await db
    .selectFrom("payment")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("transaction_hash", "=", params.transactionHash.toLowerCase())
    .where("to_address", "=", params.to.toLowerCase())
    .where("amount", "=", params.amount.toString())
    .executeTakeFirst();
  return row === undefined ? undefined : toPayment(row);
}

// Reads used by checkout and orders.

/** A payment of the session in one of `statuses` (the one that pays or paid it), if any. */
export async function paymentOfSession(
  db: Kysely<Database>,
  params: { sessionId: string; statuses: readonly PaymentStatus[] },
): Promise<Payment | undefined> {
  const row = await db
    .selectFrom("payment")
    .selectAll()
    .where("session_id", "=", params.sessionId)
    .where("status", "in", [...params.statuses])
    .executeTakeFirst();
  return row === undefined ? undefined : toPayment(row);
}

/** A payment in a list, with the order and amount of the session it is linked to (none for an unmatched one). */
export type ListedPayment = Payment & { orderId: string | null; expectedAmount: bigint | null };

/**
 * Payments oldest first (created, transaction hash, log index), after `after` when
 * given; a partner's own, or everyone's (administrators); `take` rows at most.
 */
export async function paymentsPage(
  db: Kysely<Database>,
  params: {
    partnerId?: string;
    status?: PaymentStatus;
    after?: { createdAt: number; transactionHash: string; logIndex: number };
    /** One payment by its transfer (the payment page), with the same columns as the list. */
    only?: PaymentKey;
    take: number;
  },
): Promise<ListedPayment[]> {
  let select = db
    .selectFrom("payment")
    .leftJoin("checkout_session", "checkout_session.id", "payment.session_id")
    .selectAll("payment")
    .select(["checkout_session.order_id", "checkout_session.amount_due as expected_amount"]);
  if (params.partnerId !== undefined) select = select.where("payment.partner_id", "=", params.partnerId);
  if (params.status !== undefined) select = select.where("payment.status", "=", params.status);
  if (params.only !== undefined) {
    const only = keyOf(params.only);
    select = select
      .where("payment.chain_id", "=", only.chainId)
      .where("payment.transaction_hash", "=", only.transactionHash)
      .where("payment.log_index", "=", only.logIndex);
  }
  const after = params.after;
  if (after !== undefined) {
    select = select.where(({ eb, refTuple, tuple }) =>
      eb(
        refTuple("payment.created_at", "payment.transaction_hash", "payment.log_index"),
        ">",
        tuple(after.createdAt, after.transactionHash, after.logIndex),
      ),
    );
  }
  const rows = await select
    .orderBy("payment.created_at")
    .orderBy("payment.transaction_hash")
    .orderBy("payment.log_index")
    .limit(params.take)
    .execute();
  return rows.map(({ order_id, expected_amount, ...row }) => ({
    ...toPayment(row),
    orderId: order_id ?? null,
    expectedAmount: expected_amount == null ? null : BigInt(expected_amount),
  }));
}

/** A recorded payment with the order of the session it is linked to (accounting: what the service made of a transfer). */
export type PaymentWithOrder = Payment & { orderId: string | null };

/**
 * The payments recorded for these transfers, keyed by their `LogKey` (api/values/log-key.ts)
 * (the ledger's facts, api/accounting/ledger-facts.ts); a transfer never recorded is absent.
 */
export async function paymentsByKeys(db: Kysely<Database>, keys: readonly PaymentKey[]): Promise<Map<LogKey, PaymentWithOrder>> {
  const found = new Map<LogKey, PaymentWithOrder>();
  const hashesByChain = new Map<number, Set<string>>();
  for (const key of keys) {
    const hashes = hashesByChain.get(key.chainId) ?? new Set<string>();
    hashes.add(key.transactionHash.toLowerCase());
    hashesByChain.set(key.chainId, hashes);
  }
  for (const [chainId, hashes] of hashesByChain) {
    const all = [...hashes];
    // Bounded IN lists: a page of a thousand transfers stays one statement per few hundred hashes.
    for (let start = 0; start < all.length; start += 500) {
      const rows = await db
        .selectFrom("payment")
        .leftJoin("checkout_session", "checkout_session.id", "payment.session_id")
        .selectAll("payment")
        .select("checkout_session.order_id")
        .where("payment.chain_id", "=", chainId)
        .where("payment.transaction_hash", "in", all.slice(start, start + 500))
        .execute();
      for (const row of rows) {
        const payment = toPayment(row);
        found.set(logKey(payment), { ...payment, orderId: row.order_id });
      }
    }
  }
  return found;
}

/** Every payment linked to a session of this order (settled, attached, pending or unresolved), oldest first: an order's evidence. */
export async function paymentsOfOrder(db: Kysely<Database>, orderId: string): Promise<Payment[]> {
  const rows = await db
    .selectFrom("payment")
    .innerJoin("checkout_session", "checkout_session.id", "payment.session_id")
    .selectAll("payment")
    .where("checkout_session.order_id", "=", orderId)
    .orderBy("payment.block_number")
    .orderBy("payment.log_index")
    .execute();
  return rows.map(toPayment);
}

/**
 * The transactions (lower-case hashes) of the payments into these addresses recorded
 * in blocks [fromBlock, toBlock] that match `kinds`: a status of `statuses`, or a
 * status of `reasonedStatuses` with a reason of `reasons` (the reconciliation reads
 * only the transfers whose ledger kind is not `unmatched_in`, api/accounting/).
 */
export async function paymentTransactionsOf(
  db: Kysely<Database>,
  params: {
    chainId: number;
    recipients: readonly string[];
    fromBlock: bigint;
    toBlock: bigint;
    kinds: { statuses: readonly PaymentStatus[]; reasonedStatuses: readonly PaymentStatus[]; reasons: readonly string[] };
  },
): Promise<Set<string>> {
  if (params.recipients.length === 0) return new Set();
  const { kinds } = params;
  const rows = await db
    .selectFrom("payment")
    .select("transaction_hash")
    .distinct()
    .where("chain_id", "=", params.chainId)
    .where(
      "to_address",
      "in",
      params.recipients.map((address) => address.toLowerCase()),
    )
    .where("block_number", ">=", Number(params.fromBlock))
    .where("block_number", "<=", Number(params.toBlock))
    .where((eb) =>
      eb.or([
        eb("status", "in", [...kinds.statuses]),
        eb.and([eb("status", "in", [...kinds.reasonedStatuses]), eb("reason", "in", [...kinds.reasons])]),
      ]),
    )
    .execute();
  return new Set(rows.map((row) => row.transaction_hash.toLowerCase()));
}
