import { type Kysely, sql } from "kysely";
import type { AppContext } from "../app-context.js";
import { ProblemError } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { OfferingTable } from "../store/portal-tables.js";
import { findPurchase, releasePurchase } from "./purchase-record.js";

/**
 * Takes `units` from an offering for one investor, or throws. Two guarded UPDATEs
 * in the caller's transaction, portable to Postgres (where the row lock makes the
 * second of two racing updates re-check its condition): the offering's available
 * units never go below zero and the investor's position never exceeds the cap.
 */
export async function reserveUnits(
  trx: Kysely<Database>,
  params: { offering: OfferingTable; investor: string; units: number },
): Promise<void> {
  const { offering, units } = params;
  const taken = await trx
    .updateTable("offering")
    .set({ units_available: sql<number>`units_available - ${units}` })
    .where("id", "=", offering.id)
    .where("status", "=", "open")
    .where("units_available", ">=", units)
    .executeTakeFirst();
  if (taken.numUpdatedRows !== 1n) {
    const current = await trx
      .selectFrom("offering")
      .select(["status", "units_available"])
      .where("id", "=", offering.id)
      .executeTakeFirst();
    if (current?.status !== "open") throw offeringNotOpen(current?.status ?? "closed");
    throw new ProblemError({
      status: 409,
      code: "insufficient_units",
      title: "Not enough units are available",
      detail: `${current.units_available} unit(s) are available; ${units} were asked for.`,
      extensions: { unitsAvailable: current.units_available },
    });
  }
  // After the offering's row was updated (and, on Postgres, locked until commit), so
  // racing reservations of one offering count each other's holds.
  await assertHoldCaps(trx, { offering, investor: params.investor, units });
  await trx
    .insertInto("offering_position")
    .values({ offering_id: offering.id, investor: params.investor, units: 0 })
    .onConflict((oc) => oc.columns(["offering_id", "investor"]).doNothing())
    .execute();
  const capped = await trx
    .updateTable("offering_position")
    .set({ units: sql<number>`units + ${units}` })
    .where("offering_id", "=", offering.id)
    .where("investor", "=", params.investor)
    .where(sql<boolean>`units + ${units} <= ${offering.max_units_per_investor}`)
    .executeTakeFirst();
  if (capped.numUpdatedRows !== 1n) {
    throw new ProblemError({
      status: 409,
      code: "investor_limit_exceeded",
      title: "This would exceed the per-investor limit",
      detail: `An investor may hold at most ${offering.max_units_per_investor} unit(s) of this offering, reserved or bought.`,
      extensions: { maxUnitsPerInvestor: offering.max_units_per_investor },
    });
  }
}

/** Unpaid purchase intents one investor may hold in one offering at once. */
export const MAX_OPEN_PURCHASES_PER_INVESTOR = 3;
/**
 * Wallets without approved KYC may together hold, unpaid, at most this share of an
 * offering's units (or one investor's allowance, if that is more). A wallet costs
 * nothing to make, so without it a crowd of fresh wallets could reserve every unit
 * and keep real investors out; paid units and KYC-approved investors are not capped.
 */
export const UNVERIFIED_HOLD_PERCENT = 10;

async function assertHoldCaps(
  trx: Kysely<Database>,
  params: { offering: OfferingTable; investor: string; units: number },
): Promise<void> {
  const { offering } = params;
  const unpaid = trx
    .selectFrom("rwa_purchase")
    .leftJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .where("rwa_purchase.offering_id", "=", offering.id)
    .where("rwa_purchase.released_at", "is", null)
    .where((eb) =>
      eb.or([eb("rwa_purchase.session_id", "is", null), eb("checkout_session.status", "in", ["awaiting_payment", "expired"])]),
    );
  const mine = await unpaid
    .select((eb) => eb.fn.countAll<number>().as("open"))
    .where("rwa_purchase.investor", "=", params.investor)
    .executeTakeFirstOrThrow();
  if (Number(mine.open) >= MAX_OPEN_PURCHASES_PER_INVESTOR) {
    throw new ProblemError({
      status: 409,
      code: "too_many_open_purchases",
      title: "Too many unpaid purchases in this offering",
      detail: `A wallet may hold at most ${MAX_OPEN_PURCHASES_PER_INVESTOR} unpaid purchases of one offering; pay one or let it expire.`,
      extensions: { maxOpenPurchases: MAX_OPEN_PURCHASES_PER_INVESTOR },
    });
  }
  const eligibility = await trx
    .selectFrom("investor_eligibility")
    .select("kyc_status")
    .where("address", "=", params.investor)
    .executeTakeFirst();
  if (eligibility?.kyc_status === "approved") return;
  const held = await unpaid
    .leftJoin("investor_eligibility", "investor_eligibility.address", "rwa_purchase.investor")
    .select((eb) => eb.fn.sum<number | string | null>("rwa_purchase.units").as("units"))
    .where((eb) =>
      eb.or([eb("investor_eligibility.kyc_status", "is", null), eb("investor_eligibility.kyc_status", "!=", "approved")]),
    )
    .executeTakeFirstOrThrow();
  const cap = Math.max(offering.max_units_per_investor, Math.ceil((offering.total_units * UNVERIFIED_HOLD_PERCENT) / 100));
  if (Number(held.units ?? 0) + params.units > cap) {
    throw new ProblemError({
      status: 409,
      code: "unverified_hold_limit",
      title: "Unverified wallets already hold their share of this offering",
      detail: `Wallets without approved KYC may together hold at most ${cap} unpaid unit(s) of this offering. Complete KYC, or retry when reservations expire.`,
      extensions: { unverifiedHoldLimit: cap },
    });
  }
}

export function offeringNotOpen(status: string): ProblemError {
  return new ProblemError({
    status: 409,
    code: status === "paused" ? "offering_paused" : "offering_not_open",
    title: "The offering is not open for purchases",
    detail: `The offering is ${status}.`,
    extensions: { status },
  });
}

/** Gives a purchase's units back to its offering, once (the guarded UPDATE on `released_at`). */
export async function releasePurchaseUnits(trx: Kysely<Database>, purchaseId: string, now = Date.now()): Promise<boolean> {
  const purchase = await findPurchase(trx, purchaseId);
  if (purchase === undefined || purchase.released_at !== null) return false;
  if (!(await releasePurchase(trx, { purchase, now }))) return false;
  await trx
    .updateTable("offering")
    .set({ units_available: sql<number>`units_available + ${purchase.units}` })
    .where("id", "=", purchase.offering_id)
    .execute();
  await trx
    .updateTable("offering_position")
    .set({ units: sql<number>`units - ${purchase.units}` })
    .where("offering_id", "=", purchase.offering_id)
    .where("investor", "=", purchase.investor)
    .execute();
  return true;
}

/**
 * Returns the units of purchases that can no longer be paid and closes offerings
 * that sold out. A purchase's units come back only when its checkout session
 * has expired, the index has passed the expiry (so a transfer mined in time has
 * been seen) and a grace period has gone by (so the settlement worker has
 * recorded it): a payment that was on time is never left without its units.
 */
export async function reconcileOfferings(
  context: Pick<AppContext, "store" | "indexed">,
  params: { offeringIds?: string[]; releaseGraceMs: number; now?: number },
): Promise<void> {
  const now = params.now ?? Date.now();
  const heads = await context.indexed.heads();
  let query = context.store
    .selectFrom("rwa_purchase")
    .leftJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .select(["rwa_purchase.id", "rwa_purchase.chain_id", "rwa_purchase.expires_at", "rwa_purchase.session_id"])
    .select("checkout_session.status as session_status")
    .where("rwa_purchase.released_at", "is", null)
    .where("rwa_purchase.expires_at", "<", now - params.releaseGraceMs)
    // Paid and pending purchases keep their units for good; only these can give them back.
    .where((eb) => eb.or([eb("rwa_purchase.session_id", "is", null), eb("checkout_session.status", "=", "expired")]))
    .orderBy("rwa_purchase.expires_at")
    .limit(500);
  if (params.offeringIds !== undefined) query = query.where("rwa_purchase.offering_id", "in", params.offeringIds);
  const candidates = await query.execute();
  for (const candidate of candidates) {
    const head = heads.get(candidate.chain_id);
    const indexedPastExpiry = head !== undefined && Number(head.blockTimestamp) * 1000 > Number(candidate.expires_at);
    // No session: a purchase of an earlier version whose session creation failed (it
    // then took its own transaction); nothing can pay it. Purchases now start with their session.
    const unpayable = candidate.session_id === null || (candidate.session_status === "expired" && indexedPastExpiry);
    if (unpayable) await context.store.transaction().execute((trx) => releasePurchaseUnits(trx, candidate.id, now));
  }
  await closeSoldOutOfferings(context.store, params.offeringIds, now);
}

/** An offering whose units are all paid for closes by itself. */
async function closeSoldOutOfferings(db: Kysely<Database>, offeringIds: string[] | undefined, now: number) {
  let query = db
    .selectFrom("offering")
    .innerJoin("rwa_purchase", "rwa_purchase.offering_id", "offering.id")
    .innerJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .select(["offering.id", "offering.total_units"])
    .select((eb) => eb.fn.sum<number>("rwa_purchase.units").as("sold"))
    .where("offering.status", "in", ["open", "paused"])
    .where("offering.units_available", "=", 0)
    .where("checkout_session.status", "=", "settled")
    .groupBy(["offering.id", "offering.total_units"]);
  if (offeringIds !== undefined) query = query.where("offering.id", "in", offeringIds);
  for (const row of await query.execute()) {
    if (Number(row.sold) < row.total_units) continue;
    await db
      .updateTable("offering")
      .set({ status: "closed", close_reason: "sold_out", paused_by: null, updated_at: now })
      .where("id", "=", row.id)
      .where("status", "in", ["open", "paused"])
      .execute();
  }
}
