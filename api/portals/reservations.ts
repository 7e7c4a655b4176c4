import { type Kysely, sql } from "kysely";
import type { AppContext } from "../app-context.js";
import { ProblemError } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { OfferingTable } from "../store/portal-tables.js";
import {
  countUnpaidPurchases,
  findPurchase,
  releaseCandidates,
  releasePurchase,
  settledUnitsOfExhaustedOfferings,
  unpaidUnitsOfUnverified,
} from "./purchase-record.js";

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
  const open = await countUnpaidPurchases(trx, { offeringId: offering.id, investor: params.investor });
  if (open >= MAX_OPEN_PURCHASES_PER_INVESTOR) {
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
  const held = await unpaidUnitsOfUnverified(trx, offering.id);
  const cap = Math.max(offering.max_units_per_investor, Math.ceil((offering.total_units * UNVERIFIED_HOLD_PERCENT) / 100));
  if (held + params.units > cap) {
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
  if (purchase === undefined || purchase.releasedAt !== null) return false;
  if (!(await releasePurchase(trx, { purchase, now }))) return false;
  await trx
    .updateTable("offering")
    .set({ units_available: sql<number>`units_available + ${purchase.units}` })
    .where("id", "=", purchase.offeringId)
    .execute();
  await trx
    .updateTable("offering_position")
    .set({ units: sql<number>`units - ${purchase.units}` })
    .where("offering_id", "=", purchase.offeringId)
    .where("investor", "=", purchase.investor.toLowerCase())
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
  const candidates = await releaseCandidates(context.store, {
    offeringIds: params.offeringIds,
    expiredBefore: now - params.releaseGraceMs,
    limit: 500,
  });
  for (const candidate of candidates) {
    const head = heads.get(candidate.chainId);
    const indexedPastExpiry = head !== undefined && Number(head.blockTimestamp) * 1000 > candidate.expiresAt;
    // No session: a purchase of an earlier version whose session creation failed (it
    // then took its own transaction); nothing can pay it. Purchases now start with their session.
    const unpayable = candidate.sessionId === null || (candidate.sessionStatus === "expired" && indexedPastExpiry);
    if (unpayable) await context.store.transaction().execute((trx) => releasePurchaseUnits(trx, candidate.id, now));
  }
  await closeSoldOutOfferings(context.store, params.offeringIds, now);
}

/** An offering whose units are all paid for closes by itself. */
async function closeSoldOutOfferings(db: Kysely<Database>, offeringIds: string[] | undefined, now: number) {
  for (const offering of await settledUnitsOfExhaustedOfferings(db, offeringIds)) {
    if (offering.settledUnits < offering.totalUnits) continue;
    await db
      .updateTable("offering")
      .set({ status: "closed", close_reason: "sold_out", paused_by: null, updated_at: now })
      .where("id", "=", offering.offeringId)
      .where("status", "in", ["open", "paused"])
      .execute();
  }
}
