import type { Kysely } from "kysely";
import type { Address } from "viem";
import { getOrder, type Order, orderIsCredited } from "../orders/order-record.js";
import type { CheckoutSessionTable, Database, SessionStatus } from "../store/database.js";
import { ruleFor, type TransitionTable } from "../store/transition-table.js";
import { checksum, checksumOrNull } from "../values/checksum-address.js";

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
  /** EIP-55; the store keeps lower case (compare with viem's `isAddressEqual`). */
  tokenAddress: Address;
  paymentAddress: Address;
  totalPriceUsdc: bigint;
  amountOffset: number;
  amountDue: bigint;
  /** RWA: only a transfer from this wallet settles the session. */
  requiredPayer: Address | null;
  externalOrderId: string;
  externalProductId: string;
  productName: string;
  productCategory: string;
  quantity: number;
  shippingRequired: boolean;
  certificateEnabled: boolean;
  /** The customer's contact and delivery details, as given (null until given). */
  contact: unknown;
  delivery: unknown;
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
    tokenAddress: checksum(row.token_address),
    paymentAddress: checksum(row.payment_address),
    totalPriceUsdc: BigInt(row.total_price_usdc),
    amountOffset: Number(row.amount_offset),
    amountDue: BigInt(row.amount_due),
    requiredPayer: checksumOrNull(row.required_payer),
    externalOrderId: row.external_order_id,
    externalProductId: row.external_product_id,
    productName: row.product_name,
    productCategory: row.product_category,
    quantity: Number(row.quantity),
    shippingRequired: Number(row.shipping_required) === 1,
    certificateEnabled: Number(row.certificate_enabled) === 1,
    contact: row.contact_json === null ? null : (JSON.parse(row.contact_json) as unknown),
    delivery: row.delivery_json === null ? null : (JSON.parse(row.delivery_json) as unknown),
    metadata: row.metadata_json === null ? null : (JSON.parse(row.metadata_json) as Record<string, string>),
    expiresAt: Number(row.expires_at),
    lateUntil: Number(row.late_until),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A new session as the store keeps it: addresses lower case, flags 0/1. */
function toSessionRow(session: CheckoutSession): CheckoutSessionRow {
  return {
    id: session.id,
    partner_id: session.partnerId,
    order_id: session.orderId,
    kind: session.kind,
    status: session.status,
    network: session.network,
    chain_id: session.chainId,
    token_address: session.tokenAddress.toLowerCase(),
    payment_address: session.paymentAddress.toLowerCase(),
    total_price_usdc: session.totalPriceUsdc.toString(),
    amount_offset: session.amountOffset,
    amount_due: session.amountDue.toString(),
    required_payer: session.requiredPayer?.toLowerCase() ?? null,
    external_order_id: session.externalOrderId,
    external_product_id: session.externalProductId,
    product_name: session.productName,
    product_category: session.productCategory,
    quantity: session.quantity,
    shipping_required: session.shippingRequired ? 1 : 0,
    certificate_enabled: session.certificateEnabled ? 1 : 0,
    contact_json: session.contact === null ? null : JSON.stringify(session.contact),
    delivery_json: session.delivery === null ? null : JSON.stringify(session.delivery),
    metadata_json: session.metadata === null ? null : JSON.stringify(session.metadata),
    expires_at: session.expiresAt,
    late_until: session.lateUntil,
    created_at: session.createdAt,
    updated_at: session.updatedAt,
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
    session: Pick<CheckoutSession, "id" | "status" | "orderId">;
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
    const order = await getOrder(trx, session.orderId);
    if (order.settledSessionId === session.id) return false;
  }
  if (transition === "attach") {
    update = update.where((eb) => eb.not(orderIsCredited(eb, session.orderId)));
  }
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Inserts a new session; answers it as a read would (what the store kept, converted back). */
export async function insertSession(trx: Kysely<Database>, session: CheckoutSession): Promise<CheckoutSession> {
  const row = toSessionRow(session);
  await trx.insertInto("checkout_session").values(row).execute();
  return toCheckoutSession(row);
}

export async function findSession(db: Kysely<Database>, sessionId: string): Promise<CheckoutSession | undefined> {
  const row = await db.selectFrom("checkout_session").selectAll().where("id", "=", sessionId).executeTakeFirst();
  return row === undefined ? undefined : toCheckoutSession(row);
}

export async function getSession(db: Kysely<Database>, sessionId: string): Promise<CheckoutSession> {
  const session = await findSession(db, sessionId);
  if (session === undefined) throw new Error(`checkout session ${sessionId} not found`);
  return session;
}

/** The partner's own session; another partner's is as missing as one that does not exist. */
export async function findPartnerSession(
  db: Kysely<Database>,
  params: { partnerId: string; sessionId: string },
): Promise<CheckoutSession | undefined> {
  const row = await db
    .selectFrom("checkout_session")
    .selectAll()
    .where("id", "=", params.sessionId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  return row === undefined ? undefined : toCheckoutSession(row);
}

/**
 * The session a client token opens, with the token's own expiry (a token is stored
 * hashed: `tokenHash` is its SHA-256).
 */
export async function sessionOfClientToken(
  db: Kysely<Database>,
  tokenHash: string,
): Promise<{ session: CheckoutSession; tokenExpiresAt: number } | undefined> {
  const row = await db
    .selectFrom("client_token")
    .innerJoin("checkout_session", "checkout_session.id", "client_token.session_id")
    .selectAll("checkout_session")
    .select("client_token.expires_at as token_expires_at")
    .where("client_token.token_hash", "=", tokenHash)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  const { token_expires_at, ...session } = row;
  return { session: toCheckoutSession(session), tokenExpiresAt: Number(token_expires_at) };
}

/** The session an order is read with: the one that settled it, else its latest. */
export async function sessionOfOrder(
  db: Kysely<Database>,
  order: Pick<Order, "id" | "settledSessionId">,
): Promise<CheckoutSession | undefined> {
  if (order.settledSessionId !== null) return findSession(db, order.settledSessionId);
  const row = await db
    .selectFrom("checkout_session")
    .selectAll()
    .where("order_id", "=", order.id)
    .orderBy("created_at", "desc")
    .executeTakeFirst();
  return row === undefined ? undefined : toCheckoutSession(row);
}

/** The partner and order of each session named (the admin's list of relays). */
export async function sessionOwners(
  db: Kysely<Database>,
  sessionIds: readonly string[],
): Promise<Map<string, { partnerId: string; orderId: string }>> {
  if (sessionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom("checkout_session")
    .select(["id", "partner_id", "order_id"])
    .where("id", "in", [...new Set(sessionIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, { partnerId: row.partner_id, orderId: row.order_id }]));
}

/**
 * A partner's sessions, newest first (`createdAt`, then id, descending), after
 * `before` when given; `take` rows at most.
 */
export async function partnerSessionsPage(
  db: Kysely<Database>,
  params: { partnerId: string; status?: SessionStatus; before?: { createdAt: number; id: string }; take: number },
): Promise<CheckoutSession[]> {
  let select = db.selectFrom("checkout_session").selectAll().where("partner_id", "=", params.partnerId);
  if (params.status !== undefined) select = select.where("status", "=", params.status);
  const before = params.before;
  if (before !== undefined) {
    select = select.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), "<", tuple(before.createdAt, before.id)));
  }
  const rows = await select.orderBy("created_at", "desc").orderBy("id", "desc").limit(params.take).execute();
  return rows.map(toCheckoutSession);
}

/** Sessions of the order that can still be paid or are confirming a payment. */
export async function openSessionsOfOrder(db: Kysely<Database>, orderId: string): Promise<CheckoutSession[]> {
  const rows = await db
    .selectFrom("checkout_session")
    .selectAll()
    .where("order_id", "=", orderId)
    .where("status", "in", ["awaiting_payment", "payment_pending"])
    .execute();
  return rows.map(toCheckoutSession);
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
): Promise<CheckoutSession | undefined> {
  const row = await db
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
  return row === undefined ? undefined : toCheckoutSession(row);
}

/** Open sessions whose time is up, oldest first. */
export async function sessionsDueForExpiry(
  db: Kysely<Database>,
  params: { now: number; limit: number },
): Promise<CheckoutSession[]> {
  const rows = await db
    .selectFrom("checkout_session")
    .selectAll()
    .where("status", "=", "awaiting_payment")
    .where("expires_at", "<=", params.now)
    .limit(params.limit)
    .execute();
  return rows.map(toCheckoutSession);
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

/**
 * The smallest amount due of the open sessions paying to an address (undefined when
 * none is open): a transfer below it can pay no open session (issue 24, dust).
 * Amounts are text in the store, so they are compared as `bigint` here, not in SQL.
 */
export async function smallestOpenAmountDue(
  db: Kysely<Database>,
  params: { chainId: number; paymentAddress: string },
): Promise<bigint | undefined> {
  const rows = await db
    .selectFrom("checkout_session")
    .select("amount_due")
    .where("chain_id", "=", params.chainId)
    .where("payment_address", "=", params.paymentAddress.toLowerCase())
    .where("status", "=", "awaiting_payment")
    .execute();
  let smallest: bigint | undefined;
  for (const row of rows) {
    const amount = BigInt(row.amount_due);
    if (smallest === undefined || amount < smallest) smallest = amount;
  }
  return smallest;
}
