import type { Kysely } from "kysely";
import { recordEvent } from "../outbox/record-event.js";
import type { CheckoutSessionTable, Database, SessionStatus } from "../store/database.js";
import { ruleFor, type TransitionTable } from "../store/transition-table.js";
import { releaseUnusedReference } from "./amount-reference.js";

/**
 * The checkout session record: every write of `checkout_session` goes through this
 * module, inside the caller's transaction, and every status change through
 * `moveSession` and the table below (docs/architecture.md prints it).
 */
export type CheckoutSessionRow = CheckoutSessionTable;

/** A session as the domain reads it: money as bigint, flags as booleans, instants as epoch milliseconds. */
export type CheckoutSession = {
  id: string;
  partnerId: string;
  orderId: string;
  kind: "commerce" | "rwa";
  status: SessionStatus;
  network: string;
  chainId: number;
  /** Lower-case hex, as the index stores addresses. */
  tokenAddress: string;
  paymentAddress: string;
  totalPriceUsdc: bigint;
  amountOffset: number;
  amountDue: bigint;
  requiredPayer: string | null;
  externalOrderId: string;
  shippingRequired: boolean;
  certificateEnabled: boolean;
  metadata: Record<string, string> | null;
  expiresAt: number;
  lateUntil: number;
  createdAt: number;
  updatedAt: number;
};

export function toCheckoutSession(row: CheckoutSessionRow): CheckoutSession {
  return {
    id: row.id,
    partnerId: row.partner_id,
    orderId: row.order_id,
    kind: row.kind === "rwa" ? "rwa" : "commerce",
    status: row.status,
    network: row.network,
    chainId: Number(row.chain_id),
    tokenAddress: row.token_address,
    paymentAddress: row.payment_address,
    totalPriceUsdc: BigInt(row.total_price_usdc),
    amountOffset: Number(row.amount_offset),
    amountDue: BigInt(row.amount_due),
    requiredPayer: row.required_payer,
    externalOrderId: row.external_order_id,
    shippingRequired: Number(row.shipping_required) === 1,
    certificateEnabled: Number(row.certificate_enabled) === 1,
    metadata: row.metadata_json === null ? null : (JSON.parse(row.metadata_json) as Record<string, string>),
    expiresAt: Number(row.expires_at),
    lateUntil: Number(row.late_until),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/**
 * A session's legal status changes. Each is one guarded UPDATE (`WHERE status =
 * <the status read>`), so two writers cannot both move it; a change not listed here
 * throws `TransitionRefused`.
 */
export const sessionTransitions = {
  /** A matched transfer with too few confirmations yet. */
  pay: {
    from: ["awaiting_payment", "expired"],
    to: "payment_pending",
    guard: "the transfer names this session (amount, payer, time) and no session of its order pays or paid it",
  },
  /** A matched transfer already deep enough when first recorded. */
  settle: {
    from: ["awaiting_payment", "expired"],
    to: "settled",
    guard: "as pay, and the transfer has the network's confirmations",
  },
  /** The pending transfer reached its confirmations. */
  confirm: { from: ["payment_pending"], to: "settled", guard: "its pending payment settled in the same transaction" },
  /** The pending transfer was reorged away before it confirmed. */
  reopen: { from: ["payment_pending"], to: "awaiting_payment", guard: "its pending payment was deleted in the same transaction" },
  /** At expiry, when a newer session of the order replaces it, or when another session settled the order. */
  expire: { from: ["awaiting_payment"], to: "expired" },
  /** An unresolved payment credited by hand (partner or admin); never over a payment still confirming. */
  attach: {
    from: ["awaiting_payment", "expired"],
    to: "settled",
    guard: "the order has no settled session; the order is credited in the same transaction",
  },
  /** Its transfer would credit an order another transfer already credited. */
  reject_duplicate: {
    from: ["payment_pending", "settled"],
    to: "expired",
    guard: "the session is not the one that settled its order",
  },
} as const satisfies TransitionTable<SessionStatus>;

export type SessionTransition = keyof typeof sessionTransitions;

/**
 * Applies `transition` to a session read in this transaction. Throws
 * `TransitionRefused` when the table does not allow it from the status read; answers
 * false when the row moved meanwhile (the guard lost a race).
 */
export async function moveSession(
  trx: Kysely<Database>,
  params: {
    session: Pick<CheckoutSessionRow, "id" | "status" | "order_id">;
    transition: SessionTransition;
    now: number;
    /** Expiry moved to now: the session ended before its time (superseded, order settled). */
    endNow?: boolean;
  },
): Promise<boolean> {
  const { session, transition, now } = params;
  const rule = ruleFor<SessionStatus, SessionTransition>("checkout session", sessionTransitions, transition, session.status);
  let update = trx
    .updateTable("checkout_session")
    .set({ status: rule.to, updated_at: now, ...(params.endNow ? { expires_at: now } : {}) })
    .where("id", "=", session.id)
    .where("status", "=", session.status);
  if (transition === "reject_duplicate") {
    const order = await trx
      .selectFrom("orders")
      .select("settled_session_id")
      .where("id", "=", session.order_id)
      .executeTakeFirst();
    if (order?.settled_session_id === session.id) return false;
  }
  if (transition === "attach") {
    update = update.where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom("orders")
            .select("orders.id")
            .where("orders.id", "=", session.order_id)
            .where("orders.settled_session_id", "is not", null),
        ),
      ),
    );
  }
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function insertSession(trx: Kysely<Database>, session: CheckoutSessionRow): Promise<void> {
  await trx.insertInto("checkout_session").values(session).execute();
}

export async function findSession(db: Kysely<Database>, sessionId: string): Promise<CheckoutSessionRow | undefined> {
  return db.selectFrom("checkout_session").selectAll().where("id", "=", sessionId).executeTakeFirst();
}

export async function getSession(db: Kysely<Database>, sessionId: string): Promise<CheckoutSessionRow> {
  const session = await findSession(db, sessionId);
  if (session === undefined) throw new Error(`checkout session ${sessionId} not found`);
  return session;
}

/** The partner's own session; another partner's is as missing as one that does not exist. */
export async function findPartnerSession(
  db: Kysely<Database>,
  params: { partnerId: string; sessionId: string },
): Promise<CheckoutSessionRow | undefined> {
  return db
    .selectFrom("checkout_session")
    .selectAll()
    .where("id", "=", params.sessionId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
}

/** Sessions of the order that can still be paid or are confirming a payment. */
export async function openSessionsOfOrder(db: Kysely<Database>, orderId: string): Promise<CheckoutSessionRow[]> {
  return db
    .selectFrom("checkout_session")
    .selectAll()
    .where("order_id", "=", orderId)
    .where("status", "in", ["awaiting_payment", "payment_pending"])
    .execute();
}

/** Whether a session of the order is confirming or has settled a payment (one order, one credit). */
export async function orderHasPayingSession(db: Kysely<Database>, orderId: string): Promise<boolean> {
  const paying = await db
    .selectFrom("checkout_session")
    .select("id")
    .where("order_id", "=", orderId)
    .where("status", "in", ["payment_pending", "settled"])
    .executeTakeFirst();
  return paying !== undefined;
}

/** The kind of another session of the order than `kind`, if any (an order belongs to one kind of checkout). */
export async function otherKindOfOrder(db: Kysely<Database>, params: { orderId: string; kind: string }) {
  const other = await db
    .selectFrom("checkout_session")
    .select("kind")
    .where("order_id", "=", params.orderId)
    .where("kind", "!=", params.kind)
    .executeTakeFirst();
  return other?.kind;
}

/**
 * The session an attached payment credits: the one it was submitted on when it
 * belongs to the order, else the order's latest session on the payment's chain.
 */
export async function sessionForAttach(
  db: Kysely<Database>,
  params: { orderId: string; chainId: number; submittedOn: string | null },
): Promise<CheckoutSessionRow | undefined> {
  return db
    .selectFrom("checkout_session")
    .selectAll()
    .where("order_id", "=", params.orderId)
    .where("chain_id", "=", params.chainId)
    .orderBy((eb) =>
      eb
        .case()
        .when("id", "=", params.submittedOn ?? "")
        .then(0)
        .else(1)
        .end(),
    )
    .orderBy("created_at", "desc")
    .executeTakeFirst();
}

/** Open sessions whose time is up, oldest first. */
export async function sessionsDueForExpiry(db: Kysely<Database>, params: { now: number; limit: number }) {
  return db
    .selectFrom("checkout_session")
    .selectAll()
    .where("status", "=", "awaiting_payment")
    .where("expires_at", "<=", params.now)
    .limit(params.limit)
    .execute();
}

/** The customer's contact and delivery details, while the session can still be paid. */
export async function saveCustomerDetails(
  db: Kysely<Database>,
  params: { sessionId: string; contact: unknown; delivery: unknown; now: number },
): Promise<void> {
  await db
    .updateTable("checkout_session")
    .set({
      contact_json: JSON.stringify(params.contact),
      delivery_json: params.delivery === undefined ? null : JSON.stringify(params.delivery),
      updated_at: params.now,
    })
    .where("id", "=", params.sessionId)
    .where("status", "=", "awaiting_payment")
    .execute();
}

/** Closes an open session (at its expiry, or when a newer session replaces it) and tells the partner. */
export async function expireSession(
  trx: Kysely<Database>,
  params: { session: CheckoutSessionRow; now: number; reason: "expired" | "superseded" | "order_settled" },
): Promise<boolean> {
  const { session, now } = params;
  if (session.status !== "awaiting_payment") return false;
  const moved = await moveSession(trx, { session, transition: "expire", now, endNow: params.reason !== "expired" });
  if (!moved) return false;
  await releaseUnusedReference(trx, {
    sessionId: session.id,
    endedAt: params.reason === "expired" ? Math.min(Number(session.expires_at), now) : now,
  });
  const order = await trx
    .selectFrom("orders")
    .select(["purchase_id"])
    .where("id", "=", session.order_id)
    .executeTakeFirstOrThrow();
  await recordEvent(trx, {
    partnerId: session.partner_id,
    type: "session.expired",
    orderingKey: session.order_id,
    now,
    data: {
      externalOrderId: session.external_order_id,
      orderId: session.order_id,
      purchaseId: order.purchase_id,
      sessionId: session.id,
      reason: params.reason,
      totalPriceUsdc: session.total_price_usdc,
      amount: session.amount_due,
      expiresAt: new Date(Math.min(Number(session.expires_at), now)).toISOString(),
    },
  });
  return true;
}

// Reads used by the portals and the reorg watch.

/** These sessions, in no particular order (an id that names none is skipped). */
export async function sessionsByIds(db: Kysely<Database>, sessionIds: readonly string[]): Promise<CheckoutSession[]> {
  if (sessionIds.length === 0) return [];
  const rows = await db
    .selectFrom("checkout_session")
    .selectAll()
    .where("id", "in", [...sessionIds])
    .execute();
  return rows.map(toCheckoutSession);
}
