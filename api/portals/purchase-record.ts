import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";
import type { RwaPurchaseTable } from "../store/portal-tables.js";
import { ruleFor, type TransitionTable } from "../store/transition-table.js";

/**
 * The RWA purchase record: an investor's units of an offering, held from the
 * purchase intent until they are paid (for good) or released back to the offering.
 * Its payment state is its checkout session's; its own state is the reservation.
 * Every write of `rwa_purchase` goes through this module, inside the caller's transaction.
 */
export type RwaPurchaseRow = RwaPurchaseTable;

export type ReservationState = "held" | "released";

export const reservationOf = (row: Pick<RwaPurchaseRow, "released_at">): ReservationState =>
  row.released_at === null ? "held" : "released";

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
} as const satisfies TransitionTable<ReservationState>;

/** A purchase is created with its checkout session, in the transaction that reserved its units. */
export async function insertPurchase(trx: Kysely<Database>, purchase: RwaPurchaseRow): Promise<void> {
  await trx.insertInto("rwa_purchase").values(purchase).execute();
}

export async function findPurchase(db: Kysely<Database>, purchaseId: string): Promise<RwaPurchaseRow | undefined> {
  return db.selectFrom("rwa_purchase").selectAll().where("id", "=", purchaseId).executeTakeFirst();
}

/** The investor's own purchase, or undefined (another investor's is as missing as none). */
export async function findInvestorPurchase(
  db: Kysely<Database>,
  params: { investor: string; purchaseId: string },
): Promise<RwaPurchaseRow | undefined> {
  return db
    .selectFrom("rwa_purchase")
    .selectAll()
    .where("id", "=", params.purchaseId)
    .where("investor", "=", params.investor.toLowerCase())
    .executeTakeFirst();
}

/** Marks the reservation released; answers false when it already was (the guard). Throws from an illegal state. */
export async function releasePurchase(
  trx: Kysely<Database>,
  params: { purchase: Pick<RwaPurchaseRow, "id" | "released_at">; now: number },
): Promise<boolean> {
  ruleFor("RWA purchase", purchaseTransitions, "release", reservationOf(params.purchase));
  const released = await trx
    .updateTable("rwa_purchase")
    .set({ released_at: params.now })
    .where("id", "=", params.purchase.id)
    .where("released_at", "is", null)
    .executeTakeFirst();
  return released.numUpdatedRows === 1n;
}

export type PurchaseCursor = { t: number; id: string };

/** Newest first, keyset-paged; by investor (own purchases) or by offering (issuer). */
export async function listPurchases(
  db: Kysely<Database>,
  params: { investor?: string; offeringId?: string; after?: PurchaseCursor; limit: number },
): Promise<RwaPurchaseRow[]> {
  let query = db.selectFrom("rwa_purchase").selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(params.limit);
  if (params.investor !== undefined) query = query.where("investor", "=", params.investor.toLowerCase());
  if (params.offeringId !== undefined) query = query.where("offering_id", "=", params.offeringId);
  const after = params.after;
  if (after !== undefined) {
    query = query.where((eb) =>
      eb.or([eb("created_at", "<", after.t), eb.and([eb("created_at", "=", after.t), eb("id", "<", after.id)])]),
    );
  }
  return query.execute();
}
