import { randomBytes, randomUUID } from "node:crypto";
import type { ExpressionBuilder, Kysely } from "kysely";
import type { Hex } from "viem";
import type { Database, OrderStatus, OrdersTable } from "../store/database.js";
import { ruleFor, type TransitionTable } from "../store/transition-table.js";

/**
 * The order record: one per (partner, external order id), whatever number of
 * sessions tried to pay it. Every write of `orders` goes through this module,
 * inside the caller's transaction.
 */
export type OrderRow = OrdersTable;

/** An order as the domain reads it: instants as epoch milliseconds, the purchase id as hex. */
export type Order = {
  id: string;
  partnerId: string;
  externalOrderId: string;
  /** bytes32; the certificate's token id is its uint256. */
  purchaseId: Hex;
  status: OrderStatus;
  /** The session whose payment credited the order (one order, one credit). */
  settledSessionId: string | null;
  fulfilmentReference: string | null;
  fulfilmentIdempotencyKey: string | null;
  fulfilledAt: number | null;
  createdAt: number;
  updatedAt: number;
};

export function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    partnerId: row.partner_id,
    externalOrderId: row.external_order_id,
    purchaseId: row.purchase_id as Hex,
    status: row.status,
    settledSessionId: row.settled_session_id,
    fulfilmentReference: row.fulfilment_reference,
    fulfilmentIdempotencyKey: row.fulfilment_idempotency_key,
    fulfilledAt: row.fulfilled_at === null ? null : Number(row.fulfilled_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export const orderTransitions = {
  /** One order, one credit: the first settlement of any of its sessions wins, in any process. */
  credit: { from: ["awaiting_payment"], to: "paid", guard: "settled_session_id IS NULL" },
  /** The partner's fulfilment reference (a shipment, say). */
  fulfil: { from: ["paid"], to: "fulfilled" },
} as const satisfies TransitionTable<OrderStatus>;

export type OrderTransition = keyof typeof orderTransitions;

export async function findOrder(db: Kysely<Database>, orderId: string): Promise<Order | undefined> {
  const row = await db.selectFrom("orders").selectAll().where("id", "=", orderId).executeTakeFirst();
  return row === undefined ? undefined : toOrder(row);
}

export async function getOrder(db: Kysely<Database>, orderId: string): Promise<Order> {
  const order = await findOrder(db, orderId);
  if (order === undefined) throw new Error(`order ${orderId} not found`);
  return order;
}

/** The partner's own order; another partner's is as missing as one that does not exist. */
export async function findOrderOfPartner(
  db: Kysely<Database>,
  params: { partnerId: string; orderId: string },
): Promise<Order | undefined> {
  const row = await db
    .selectFrom("orders")
    .selectAll()
    .where("id", "=", params.orderId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  return row === undefined ? undefined : toOrder(row);
}

/** The orders named, by id (a list of sessions shows each one's order). */
export async function ordersByIds(db: Kysely<Database>, orderIds: readonly string[]): Promise<Map<string, Order>> {
  if (orderIds.length === 0) return new Map();
  const rows = await db
    .selectFrom("orders")
    .selectAll()
    .where("id", "in", [...new Set(orderIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, toOrder(row)]));
}

/**
 * `EXISTS (the order, credited)`, for a guarded UPDATE of another record (a session's
 * `attach` checks it again in its own statement, so a concurrent credit wins).
 */
export function orderIsCredited(eb: ExpressionBuilder<Database, "checkout_session">, orderId: string) {
  return eb.exists(
    eb
      .selectFrom("orders")
      .select("orders.id")
      .where("orders.id", "=", orderId)
      .where("orders.settled_session_id", "is not", null),
  );
}

/** The partner's order for its external id, created (unpaid, with a fresh purchase id) on first use. */
export async function findOrCreateOrder(
  trx: Kysely<Database>,
  params: { partnerId: string; externalOrderId: string; now: number },
): Promise<Order> {
  const existing = await trx
    .selectFrom("orders")
    .selectAll()
    .where("partner_id", "=", params.partnerId)
    .where("external_order_id", "=", params.externalOrderId)
    .executeTakeFirst();
  if (existing !== undefined) return toOrder(existing);
  const order: OrderRow = {
    id: `ord_${randomUUID().replaceAll("-", "")}`,
    partner_id: params.partnerId,
    external_order_id: params.externalOrderId,
    purchase_id: `0x${randomBytes(32).toString("hex")}`,
    status: "awaiting_payment",
    settled_session_id: null,
    fulfilment_reference: null,
    fulfilment_idempotency_key: null,
    fulfilled_at: null,
    created_at: params.now,
    updated_at: params.now,
  };
  // Another request may create the same order at once (two replicas, one idempotency key):
  // Postgres makes this insert wait for it and then find the row taken. Its order is the
  // order; the read below sees it once committed (each statement reads afresh).
  const inserted = await trx
    .insertInto("orders")
    .values(order)
    .onConflict((oc) => oc.columns(["partner_id", "external_order_id"]).doNothing())
    .executeTakeFirst();
  if (inserted.numInsertedOrUpdatedRows === 1n) return toOrder(order);
  const created = await trx
    .selectFrom("orders")
    .selectAll()
    .where("partner_id", "=", params.partnerId)
    .where("external_order_id", "=", params.externalOrderId)
    .executeTakeFirst();
  if (created === undefined) throw new Error(`order ${params.externalOrderId} vanished while created`);
  return toOrder(created);
}

/**
 * Credits the order to `sessionId`. The guard (`settled_session_id IS NULL`) is the
 * last word on "one order, one credit", also between processes: a concurrent
 * settlement of the same order waits on the row and then finds it paid. Answers
 * whether this call credited it.
 */
export async function creditOrder(
  trx: Kysely<Database>,
  params: { orderId: string; sessionId: string; now: number },
): Promise<boolean> {
  const credited = await trx
    .updateTable("orders")
    .set({ status: orderTransitions.credit.to, settled_session_id: params.sessionId, updated_at: params.now })
    .where("id", "=", params.orderId)
    .where("status", "in", orderTransitions.credit.from)
    .where("settled_session_id", "is", null)
    .executeTakeFirst();
  return credited.numUpdatedRows === 1n;
}

/** Marks a paid order fulfilled (throws `TransitionRefused` from any other status); false when it moved meanwhile. */
export async function fulfilOrderRecord(
  trx: Kysely<Database>,
  params: { order: Pick<Order, "id" | "status">; reference: string; idempotencyKey: string; now: number },
): Promise<boolean> {
  const rule = ruleFor<OrderStatus, OrderTransition>("order", orderTransitions, "fulfil", params.order.status);
  const updated = await trx
    .updateTable("orders")
    .set({
      status: rule.to,
      fulfilment_reference: params.reference,
      fulfilment_idempotency_key: params.idempotencyKey,
      fulfilled_at: params.now,
      updated_at: params.now,
    })
    .where("id", "=", params.order.id)
    .where("status", "=", params.order.status)
    .executeTakeFirst();
  return updated.numUpdatedRows === 1n;
}

// Reads used by the portals and the reorg watch.

/** An order's on-chain purchase id (bytes32 hex) and status. */
export type OrderPurchaseId = { id: string; purchaseId: string; status: OrderStatus };

/** The orders of these on-chain purchase ids (public certificate verification). */
export async function ordersOfPurchaseIds(db: Kysely<Database>, purchaseIds: readonly string[]): Promise<OrderPurchaseId[]> {
  if (purchaseIds.length === 0) return [];
  const rows = await db
    .selectFrom("orders")
    .select(["id", "purchase_id", "status"])
    .where("purchase_id", "in", [...purchaseIds])
    .execute();
  return rows.map((row) => ({ id: row.id, purchaseId: row.purchase_id, status: row.status }));
}

/** These orders' on-chain purchase ids (a purchase shows its order's). */
export async function purchaseIdsOfOrders(db: Kysely<Database>, orderIds: readonly string[]): Promise<OrderPurchaseId[]> {
  if (orderIds.length === 0) return [];
  const rows = await db
    .selectFrom("orders")
    .select(["id", "purchase_id", "status"])
    .where("id", "in", [...orderIds])
    .execute();
  return rows.map((row) => ({ id: row.id, purchaseId: row.purchase_id, status: row.status }));
}

/**
 * Orders created within [fromTime, toTime), oldest first by (created, id), after
 * `after`; one partner's or every partner's (an auditor): the accounting orders list.
 */
export async function ordersCreatedBetween(
  db: Kysely<Database>,
  params: {
    partnerId?: string;
    status?: OrderStatus;
    fromTime: number;
    toTime: number;
    after?: { createdAt: number; id: string };
    take: number;
  },
): Promise<Order[]> {
  let query = db
    .selectFrom("orders")
    .selectAll()
    .where("created_at", ">=", params.fromTime)
    .where("created_at", "<", params.toTime);
  if (params.partnerId !== undefined) query = query.where("partner_id", "=", params.partnerId);
  if (params.status !== undefined) query = query.where("status", "=", params.status);
  const after = params.after;
  if (after !== undefined)
    query = query.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), ">", tuple(after.createdAt, after.id)));
  const rows = await query.orderBy("created_at").orderBy("id").limit(params.take).execute();
  return rows.map(toOrder);
}
