import { CompiledQuery, type Kysely } from "kysely";
import type { Address } from "viem";
import { getOrder, type Order, orderIsCredited } from "../orders/order-record.js";
import type {
  CertificateTable,
  CheckoutSessionTable,
  Database,
  OrdersTable,
  PaymentTable,
  SessionStatus,
} from "../store/database.js";
import type { PartnerBrandingTable, SessionPresentationTable } from "../store/hosted-tables.js";
import type { RelayedAuthorizationTable } from "../store/relay-tables.js";
import type { RewardTable } from "../store/reward-tables.js";
import { everyColumn, fromJson, rowAsJson, rowsAsJson } from "../store/row-json.js";
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

/** The branding columns the customer's page shows (not the logo's bytes, not the framing origins). */
export type BrandingColumns = Pick<
  PartnerBrandingTable,
  "display_name" | "accent_color" | "support_url" | "support_email" | "logo_sha256"
>;

/**
 * A session with every neighbouring row its views show, read in one query (docs/architecture.md,
 * "The hot paths"). The neighbours come as their owners' rows: each view converts them with the
 * owner's converter (`toOrder`, `toPayment`, ...), which this module may not import.
 */
export type SessionSurroundings = {
  session: CheckoutSession;
  /** The expiry of the client token the read named, when it named one of this session. */
  tokenExpiresAt: number | undefined;
  order: OrdersTable;
  /** The payment that pays (or paid) the session: pending, settled or attached. */
  payingPayment: PaymentTable | undefined;
  /** The latest transfer submitted on the session that does not pay it (unresolved or refund requested). */
  unresolvedPayment: PaymentTable | undefined;
  certificate: CertificateTable | undefined;
  presentation: SessionPresentationTable | undefined;
  partnerName: string | undefined;
  branding: BrandingColumns | undefined;
  /** The session's latest relayed authorization (gasless payment), if any. */
  latestRelay: RelayedAuthorizationTable | undefined;
  /** The order's rewards, oldest first. */
  rewards: RewardTable[];
};

const ORDER_COLUMNS = everyColumn<OrdersTable>()([
  "id",
  "partner_id",
  "external_order_id",
  "purchase_id",
  "status",
  "settled_session_id",
  "fulfilment_reference",
  "fulfilment_idempotency_key",
  "fulfilled_at",
  "created_at",
  "updated_at",
]);
const PAYMENT_COLUMNS = everyColumn<PaymentTable>()([
  "chain_id",
  "transaction_hash",
  "log_index",
  "partner_id",
  "session_id",
  "status",
  "reason",
  "from_address",
  "to_address",
  "amount",
  "block_number",
  "block_hash",
  "block_timestamp",
  "resolution",
  "created_at",
  "updated_at",
]);
const CERTIFICATE_COLUMNS = everyColumn<CertificateTable>()([
  "order_id",
  "purchase_id",
  "status",
  "chain_id",
  "contract_address",
  "buyer",
  "token_id",
  "voucher_deadline",
  "mint_transaction_hash",
  "mint_block_number",
  "minted_at",
  "created_at",
  "updated_at",
]);
const PRESENTATION_COLUMNS = everyColumn<SessionPresentationTable>()([
  "session_id",
  "success_url",
  "cancel_url",
  "customer_json",
  "line_items_json",
]);
const BRANDING_COLUMNS = everyColumn<BrandingColumns>()([
  "display_name",
  "accent_color",
  "support_url",
  "support_email",
  "logo_sha256",
]);
const RELAY_COLUMNS = everyColumn<RelayedAuthorizationTable>()([
  "id",
  "session_id",
  "live_session_id",
  "chain_id",
  "token_address",
  "from_address",
  "to_address",
  "value",
  "valid_after",
  "valid_before",
  "nonce",
  "signature",
  "status",
  "relayer_address",
  "relayer_nonce",
  "transaction_hash",
  "transaction_hashes",
  "gas_limit",
  "max_fee_per_gas",
  "max_priority_fee_per_gas",
  "replacements",
  "submitted_at",
  "gas_used",
  "effective_gas_price",
  "gas_cost_wei",
  "block_number",
  "failure_code",
  "failure_detail",
  "created_at",
  "updated_at",
]);
const REWARD_COLUMNS = everyColumn<RewardTable>()([
  "id",
  "onchain_id",
  "partner_id",
  "order_id",
  "external_order_id",
  "source",
  "idempotency_key",
  "status",
  "chain_id",
  "distributor_address",
  "token_address",
  "amount",
  "funder",
  "recipient",
  "voucher_deadline",
  "transaction_hash",
  "block_number",
  "claimed_at",
  "revoked_reason",
  "revocation_due",
  "expires_at",
  "created_at",
  "updated_at",
]);

/**
 * A session and its surroundings in ONE query: each neighbour is a subquery (not a join, so
 * one session row comes back whatever its neighbours hold). The session is named by its id, by
 * a client token (stored hashed), or both; with `partnerId`, another partner's session is as
 * missing as one that does not exist.
 */
export async function sessionWithSurroundings(
  db: Kysely<Database>,
  by: { sessionId: string; partnerId?: string; clientTokenHash?: string } | { clientTokenHash: string },
): Promise<SessionSurroundings | undefined> {
  const given = {
    sessionId: "sessionId" in by ? by.sessionId : undefined,
    partnerId: "partnerId" in by ? by.partnerId : undefined,
    clientTokenHash: by.clientTokenHash,
  };
  // Building and compiling this query took more of the replica's time than running it (a CPU
  // profile of the status poll): it is compiled once per shape and dialect, then run with the
  // values of this call in place of the placeholders it was compiled with.
  const compiled = compiledSurroundings(db, {
    sessionId: given.sessionId !== undefined,
    partnerId: given.partnerId !== undefined,
    clientTokenHash: given.clientTokenHash !== undefined,
  });
  const parameters = compiled.parameters.map((value) => {
    const name = placeholderNames.get(value);
    return name === undefined ? value : given[name];
  });
  const result = await db.executeQuery(CompiledQuery.raw(compiled.sql, parameters));
  const row = result.rows[0] as SurroundingsRow | undefined;
  if (row === undefined) return undefined;
  return toSurroundings(row);
}

type SurroundingsRow = CheckoutSessionRow & {
  order_json: unknown;
  paying_payment_json: unknown;
  unresolved_payment_json: unknown;
  certificate_json: unknown;
  presentation_json: unknown;
  partner_name: string | null;
  branding_json: unknown;
  latest_relay_json: unknown;
  rewards_json: unknown;
  token_expires_at?: number | string | null;
};

type SurroundingsKey = "sessionId" | "partnerId" | "clientTokenHash";

/** What a compiled surroundings query holds where this call's values go (unlike any real id or hash). */
const PLACEHOLDERS: Record<SurroundingsKey, string> = {
  sessionId: "\u0000session id",
  partnerId: "\u0000partner id",
  clientTokenHash: "\u0000client token hash",
};
const placeholderNames = new Map<unknown, SurroundingsKey>(
  Object.entries(PLACEHOLDERS).map(([name, value]) => [value, name as SurroundingsKey]),
);

/** The compiled surroundings query of each shape (which keys a read names) and dialect. */
const compiledShapes = new Map<string, CompiledQuery>();

function compiledSurroundings(db: Kysely<Database>, shape: Record<SurroundingsKey, boolean>): CompiledQuery {
  const key = `${db.getExecutor().adapter.constructor.name}:${shape.sessionId}:${shape.partnerId}:${shape.clientTokenHash}`;
  let compiled = compiledShapes.get(key);
  if (compiled === undefined) {
    compiled = surroundingsQuery(db, {
      sessionId: shape.sessionId ? PLACEHOLDERS.sessionId : undefined,
      partnerId: shape.partnerId ? PLACEHOLDERS.partnerId : undefined,
      clientTokenHash: shape.clientTokenHash ? PLACEHOLDERS.clientTokenHash : undefined,
    }).compile();
    compiledShapes.set(key, compiled);
  }
  return compiled;
}

function surroundingsQuery(
  db: Kysely<Database>,
  by: { sessionId: string | undefined; partnerId: string | undefined; clientTokenHash: string | undefined },
) {
  const any = db as unknown as Kysely<unknown>;
  let select = db
    .selectFrom("checkout_session")
    .selectAll("checkout_session")
    .select((eb) => [
      eb
        .selectFrom("orders as o")
        .select(rowAsJson(any, "o", ORDER_COLUMNS).as("j"))
        .whereRef("o.id", "=", "checkout_session.order_id")
        .as("order_json"),
      eb
        .selectFrom("payment as p")
        .select(rowAsJson(any, "p", PAYMENT_COLUMNS).as("j"))
        .whereRef("p.session_id", "=", "checkout_session.id")
        .where("p.status", "in", ["pending", "settled", "attached"])
        .limit(1)
        .as("paying_payment_json"),
      eb
        .selectFrom("payment as u")
        .select(rowAsJson(any, "u", PAYMENT_COLUMNS).as("j"))
        .whereRef("u.session_id", "=", "checkout_session.id")
        .where("u.status", "in", ["unresolved", "refund_requested"])
        .orderBy("u.created_at", "desc")
        .limit(1)
        .as("unresolved_payment_json"),
      eb
        .selectFrom("certificate as c")
        .select(rowAsJson(any, "c", CERTIFICATE_COLUMNS).as("j"))
        .whereRef("c.order_id", "=", "checkout_session.order_id")
        .as("certificate_json"),
      eb
        .selectFrom("session_presentation as sp")
        .select(rowAsJson(any, "sp", PRESENTATION_COLUMNS).as("j"))
        .whereRef("sp.session_id", "=", "checkout_session.id")
        .as("presentation_json"),
      eb.selectFrom("partner as pa").select("pa.name").whereRef("pa.id", "=", "checkout_session.partner_id").as("partner_name"),
      eb
        .selectFrom("partner_branding as b")
        .select(rowAsJson(any, "b", BRANDING_COLUMNS).as("j"))
        .whereRef("b.partner_id", "=", "checkout_session.partner_id")
        .as("branding_json"),
      eb
        .selectFrom("relayed_authorization as ra")
        .select(rowAsJson(any, "ra", RELAY_COLUMNS).as("j"))
        .whereRef("ra.session_id", "=", "checkout_session.id")
        .orderBy("ra.created_at", "desc")
        .orderBy("ra.id", "desc")
        .limit(1)
        .as("latest_relay_json"),
      eb
        .selectFrom("reward as r")
        .select(rowsAsJson(any, "r", REWARD_COLUMNS).as("j"))
        .whereRef("r.order_id", "=", "checkout_session.order_id")
        .as("rewards_json"),
    ]);
  const tokenHash = by.clientTokenHash;
  if (tokenHash !== undefined) {
    select = select
      .select((eb) =>
        eb
          .selectFrom("client_token as t")
          .select("t.expires_at")
          .where("t.token_hash", "=", tokenHash)
          .whereRef("t.session_id", "=", "checkout_session.id")
          .as("token_expires_at"),
      )
      .where("checkout_session.id", "in", (eb) =>
        eb.selectFrom("client_token as t").select("t.session_id").where("t.token_hash", "=", tokenHash),
      ) as typeof select;
  }
  if (by.sessionId !== undefined) select = select.where("checkout_session.id", "=", by.sessionId);
  if (by.partnerId !== undefined) select = select.where("checkout_session.partner_id", "=", by.partnerId);
  return select;
}

function toSurroundings(row: SurroundingsRow): SessionSurroundings {
  const {
    order_json,
    paying_payment_json,
    unresolved_payment_json,
    certificate_json,
    presentation_json,
    partner_name,
    branding_json,
    latest_relay_json,
    rewards_json,
    token_expires_at,
    ...session
  } = row;
  const order = fromJson<OrdersTable>(order_json);
  // A session's order is a foreign key: a session without one is a broken store, not a miss.
  if (order === undefined) throw new Error(`checkout session ${session.id} has no order ${session.order_id}`);
  const rewards = fromJson<RewardTable[]>(rewards_json) ?? [];
  rewards.sort((a, b) => Number(a.created_at) - Number(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    session: toCheckoutSession(session),
    tokenExpiresAt: token_expires_at === null || token_expires_at === undefined ? undefined : Number(token_expires_at),
    order,
    payingPayment: fromJson<PaymentTable>(paying_payment_json),
    unresolvedPayment: fromJson<PaymentTable>(unresolved_payment_json),
    certificate: fromJson<CertificateTable>(certificate_json),
    presentation: fromJson<SessionPresentationTable>(presentation_json),
    partnerName: partner_name ?? undefined,
    branding: fromJson<BrandingColumns>(branding_json),
    latestRelay: fromJson<RelayedAuthorizationTable>(latest_relay_json),
    rewards,
  };
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
