import type { Kysely } from "kysely";
import type { Address } from "viem";
import type { Database, SessionStatus } from "../store/database.js";
import type { RwaPurchaseTable } from "../store/portal-tables.js";
import { ruleFor, type TransitionTable } from "../store/transition-table.js";
import { checksum } from "../values/checksum-address.js";

/**
 * The RWA purchase record: an investor's units of an offering, held from the
 * purchase intent until they are paid (for good) or released back to the offering.
 * Its payment state is its checkout session's; its own state is the reservation.
 * Every read and write of `rwa_purchase` goes through this module (writes inside the
 * caller's transaction), and every read answers `Purchase`.
 */
export type RwaPurchaseRow = RwaPurchaseTable;

/** A purchase as the domain reads it: money as bigint, checksummed addresses, instants as epoch milliseconds. */
export type Purchase = {
  id: string;
  offeringId: string;
  investor: Address;
  /** Wallet the certificate is minted to (the investor's unless given at checkout). */
  recipient: Address;
  units: number;
  unitPriceUsdc: bigint;
  totalPriceUsdc: bigint;
  network: string;
  chainId: number;
  /** The payment engine's checkout session; null only for purchases of an earlier version whose session failed. */
  sessionId: string | null;
  expiresAt: number;
  /** When the reserved units went back to the offering (purchase expired or failed, or its order fully refunded). */
  releasedAt: number | null;
  createdAt: number;
};

export function toPurchase(row: RwaPurchaseRow): Purchase {
  return {
    id: row.id,
    offeringId: row.offering_id,
    investor: checksum(row.investor),
    recipient: checksum(row.recipient),
    units: Number(row.units),
    unitPriceUsdc: BigInt(row.unit_price_usdc),
    totalPriceUsdc: BigInt(row.total_price_usdc),
    network: row.network,
    chainId: Number(row.chain_id),
    sessionId: row.session_id,
    expiresAt: Number(row.expires_at),
    releasedAt: row.released_at === null ? null : Number(row.released_at),
    createdAt: Number(row.created_at),
  };
}

/** The row the store keeps: addresses lower case (lookups and uniqueness never depend on case), money as decimal strings. */
function toRow(purchase: Purchase): RwaPurchaseRow {
  return {
    id: purchase.id,
    offering_id: purchase.offeringId,
    investor: purchase.investor.toLowerCase(),
    recipient: purchase.recipient.toLowerCase(),
    units: purchase.units,
    unit_price_usdc: purchase.unitPriceUsdc.toString(),
    total_price_usdc: purchase.totalPriceUsdc.toString(),
    network: purchase.network,
    chain_id: purchase.chainId,
    session_id: purchase.sessionId,
    expires_at: purchase.expiresAt,
    released_at: purchase.releasedAt,
    created_at: purchase.createdAt,
  };
}

export type ReservationState = "held" | "released";

export const reservationOf = (purchase: Pick<Purchase, "releasedAt">): ReservationState =>
  purchase.releasedAt === null ? "held" : "released";

export const purchaseTransitions = {
  /**
   * The units go back to the offering, once. Only for a purchase nothing can pay any
   * more: its session expired, the index passed the expiry and a grace went by (see
   * reconcileOfferings), or it has no session.
   */
  release: {
    from: ["held"],
    to: "released",
    guard: "released_at IS NULL; the session expired, the index passed its expiry and the grace went by (or it has no session)",
  },
  /**
   * A late payment attached by hand (its partner or an admin) takes the units again,
   * in the transaction that re-reserved them from the offering and re-checked the
   * investor exactly as a fresh purchase (see `reserveForAttachedPayment`).
   */
  rehold: {
    from: ["released"],
    to: "held",
    guard: "released_at IS NOT NULL; the offering's units were taken again in the same transaction",
  },
  /**
   * A paid purchase whose order became fully refunded gives its units back to the
   * offering, once, in the transaction of the refund that made it so (see
   * `returnRefundedPurchaseUnits`). A partial refund keeps the units.
   */
  refund: {
    from: ["held"],
    to: "released",
    guard: "released_at IS NULL; the purchase's order is fully refunded (succeeded refunds reach what was paid)",
  },
} as const satisfies TransitionTable<ReservationState>;

/** A purchase is created with its checkout session, in the transaction that reserved its units. */
export async function insertPurchase(trx: Kysely<Database>, purchase: Purchase): Promise<void> {
  await trx.insertInto("rwa_purchase").values(toRow(purchase)).execute();
}

export async function findPurchase(db: Kysely<Database>, purchaseId: string): Promise<Purchase | undefined> {
  const row = await db.selectFrom("rwa_purchase").selectAll().where("id", "=", purchaseId).executeTakeFirst();
  return row === undefined ? undefined : toPurchase(row);
}

/** The investor's own purchase, or undefined (another investor's is as missing as none). */
export async function findInvestorPurchase(
  db: Kysely<Database>,
  params: { investor: string; purchaseId: string },
): Promise<Purchase | undefined> {
  const row = await db
    .selectFrom("rwa_purchase")
    .selectAll()
    .where("id", "=", params.purchaseId)
    .where("investor", "=", params.investor.toLowerCase())
    .executeTakeFirst();
  return row === undefined ? undefined : toPurchase(row);
}

/**
 * Marks the reservation released (`release`, or `refund` for a fully refunded purchase);
 * answers false when it already was (the guard). Throws from an illegal state.
 */
export async function releasePurchase(
  trx: Kysely<Database>,
  params: { purchase: Pick<Purchase, "id" | "releasedAt">; now: number; transition?: "release" | "refund" },
): Promise<boolean> {
  ruleFor("RWA purchase", purchaseTransitions, params.transition ?? "release", reservationOf(params.purchase));
  const released = await trx
    .updateTable("rwa_purchase")
    .set({ released_at: params.now })
    .where("id", "=", params.purchase.id)
    .where("released_at", "is", null)
    .executeTakeFirst();
  return released.numUpdatedRows === 1n;
}

/** Marks a released reservation held again; answers false when it no longer was released (the guard). */
export async function reholdPurchase(
  trx: Kysely<Database>,
  params: { purchase: Pick<Purchase, "id" | "releasedAt"> },
): Promise<boolean> {
  ruleFor("RWA purchase", purchaseTransitions, "rehold", reservationOf(params.purchase));
  const held = await trx
    .updateTable("rwa_purchase")
    .set({ released_at: null })
    .where("id", "=", params.purchase.id)
    .where("released_at", "is not", null)
    .executeTakeFirst();
  return held.numUpdatedRows === 1n;
}

/** The purchase an order pays for (through its checkout session), if the order is an RWA purchase's. */
export async function purchaseOfOrder(db: Kysely<Database>, orderId: string): Promise<Purchase | undefined> {
  const row = await db
    .selectFrom("rwa_purchase")
    .innerJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .selectAll("rwa_purchase")
    .where("checkout_session.order_id", "=", orderId)
    .executeTakeFirst();
  return row === undefined ? undefined : toPurchase(row);
}

/** The purchase a checkout session pays, if the session is an RWA purchase's. */
export async function purchaseOfSession(db: Kysely<Database>, sessionId: string): Promise<Purchase | undefined> {
  const row = await db.selectFrom("rwa_purchase").selectAll().where("session_id", "=", sessionId).executeTakeFirst();
  return row === undefined ? undefined : toPurchase(row);
}

export type PurchaseCursor = { t: number; id: string };

/** Newest first, keyset-paged; by investor (own purchases) or by offering (issuer). */
export async function listPurchases(
  db: Kysely<Database>,
  params: { investor?: string; offeringId?: string; after?: PurchaseCursor; limit: number },
): Promise<Purchase[]> {
  let query = db.selectFrom("rwa_purchase").selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(params.limit);
  if (params.investor !== undefined) query = query.where("investor", "=", params.investor.toLowerCase());
  if (params.offeringId !== undefined) query = query.where("offering_id", "=", params.offeringId);
  const after = params.after;
  if (after !== undefined) {
    query = query.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), "<", tuple(after.t, after.id)));
  }
  return (await query.execute()).map(toPurchase);
}

/** Settled purchases of an offering still holding their units (not fully refunded), by investor (the holder register). */
export async function settledPurchasesOfOffering(db: Kysely<Database>, offeringId: string): Promise<Purchase[]> {
  const rows = await db
    .selectFrom("rwa_purchase")
    .innerJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .selectAll("rwa_purchase")
    .where("rwa_purchase.offering_id", "=", offeringId)
    .where("checkout_session.status", "=", "settled")
    .where("rwa_purchase.released_at", "is", null)
    .orderBy("rwa_purchase.investor")
    .execute();
  return rows.map(toPurchase);
}

/** Purchases of an offering still holding units unpaid: no session, or one awaiting payment or expired. */
const unpaidPurchases = (db: Kysely<Database>, offeringId: string) =>
  db
    .selectFrom("rwa_purchase")
    .leftJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .where("rwa_purchase.offering_id", "=", offeringId)
    .where("rwa_purchase.released_at", "is", null)
    .where((eb) =>
      eb.or([eb("rwa_purchase.session_id", "is", null), eb("checkout_session.status", "in", ["awaiting_payment", "expired"])]),
    );

/** How many unpaid purchases of the offering this investor holds. */
export async function countUnpaidPurchases(
  db: Kysely<Database>,
  params: { offeringId: string; investor: string },
): Promise<number> {
  const mine = await unpaidPurchases(db, params.offeringId)
    .select((eb) => eb.fn.countAll<number | string>().as("open"))
    .where("rwa_purchase.investor", "=", params.investor.toLowerCase())
    .executeTakeFirstOrThrow();
  return Number(mine.open);
}

/** Units of the offering held unpaid by wallets without approved KYC, together. */
export async function unpaidUnitsOfUnverified(db: Kysely<Database>, offeringId: string): Promise<number> {
  const held = await unpaidPurchases(db, offeringId)
    .leftJoin("investor_eligibility", "investor_eligibility.address", "rwa_purchase.investor")
    .select((eb) => eb.fn.sum<number | string | null>("rwa_purchase.units").as("units"))
    .where((eb) =>
      eb.or([eb("investor_eligibility.kyc_status", "is", null), eb("investor_eligibility.kyc_status", "!=", "approved")]),
    )
    .executeTakeFirstOrThrow();
  return Number(held.units ?? 0);
}

/** A held purchase past its expiry (and grace) whose units may go back: the status of its session decides. */
export type ReleaseCandidate = Pick<Purchase, "id" | "chainId" | "expiresAt" | "sessionId"> & {
  sessionStatus: SessionStatus | null;
};

/** Held purchases that expired before `expiredBefore` and nothing paid (no session, or an expired one), oldest first. */
export async function releaseCandidates(
  db: Kysely<Database>,
  params: { offeringIds?: string[]; expiredBefore: number; limit: number },
): Promise<ReleaseCandidate[]> {
  let query = db
    .selectFrom("rwa_purchase")
    .leftJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .select(["rwa_purchase.id", "rwa_purchase.chain_id", "rwa_purchase.expires_at", "rwa_purchase.session_id"])
    .select("checkout_session.status as session_status")
    .where("rwa_purchase.released_at", "is", null)
    .where("rwa_purchase.expires_at", "<", params.expiredBefore)
    // Paid and pending purchases keep their units for good; only these can give them back.
    .where((eb) => eb.or([eb("rwa_purchase.session_id", "is", null), eb("checkout_session.status", "=", "expired")]))
    .orderBy("rwa_purchase.expires_at")
    .limit(params.limit);
  if (params.offeringIds !== undefined) query = query.where("rwa_purchase.offering_id", "in", params.offeringIds);
  const rows = await query.execute();
  return rows.map((row) => ({
    id: row.id,
    chainId: Number(row.chain_id),
    expiresAt: Number(row.expires_at),
    sessionId: row.session_id,
    sessionStatus: row.session_status,
  }));
}

/** Open or paused offerings with no unit available, with the units their settled purchases hold. */
export async function settledUnitsOfExhaustedOfferings(
  db: Kysely<Database>,
  offeringIds: string[] | undefined,
): Promise<Array<{ offeringId: string; totalUnits: number; settledUnits: number }>> {
  let query = db
    .selectFrom("offering")
    .innerJoin("rwa_purchase", "rwa_purchase.offering_id", "offering.id")
    .innerJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .select(["offering.id", "offering.total_units"])
    .select((eb) => eb.fn.sum<number | string>("rwa_purchase.units").as("sold"))
    .where("offering.status", "in", ["open", "paused"])
    .where("offering.units_available", "=", 0)
    .where("checkout_session.status", "=", "settled")
    .where("rwa_purchase.released_at", "is", null)
    .groupBy(["offering.id", "offering.total_units"]);
  if (offeringIds !== undefined) query = query.where("offering.id", "in", offeringIds);
  const rows = await query.execute();
  return rows.map((row) => ({ offeringId: row.id, totalUnits: Number(row.total_units), settledUnits: Number(row.sold) }));
}

/** The offering (and its issuer) each of these orders bought into, for the orders of RWA purchases. */
export async function offeringsOfOrders(
  db: Kysely<Database>,
  orderIds: readonly string[],
): Promise<Array<{ orderId: string; offeringId: string; offeringName: string; issuerName: string }>> {
  if (orderIds.length === 0) return [];
  const rows = await db
    .selectFrom("rwa_purchase")
    .innerJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .innerJoin("offering", "offering.id", "rwa_purchase.offering_id")
    .innerJoin("issuer", "issuer.id", "offering.issuer_id")
    .select(["checkout_session.order_id", "offering.id as offering_id", "offering.name", "issuer.name as issuer_name"])
    .where("checkout_session.order_id", "in", [...orderIds])
    .execute();
  return rows.map((row) => ({
    orderId: row.order_id,
    offeringId: row.offering_id,
    offeringName: row.name,
    issuerName: row.issuer_name,
  }));
}
