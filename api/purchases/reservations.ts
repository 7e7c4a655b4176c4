import { type Kysely, sql } from "kysely";
import { isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import type { CheckoutSession } from "../checkout/session-record.js";
import { findEligibility, ineligibilityReasons } from "../compliance/eligibility.js";
import { ProblemError, problem } from "../http/problem.js";
import { closeSoldOutOffering, findOffering, returnOfferingUnits, takeOfferingUnits } from "../offerings/offerings.js";
import type { Payment } from "../payments/payment-record.js";
import type { Database } from "../store/database.js";
import type { OfferingTable } from "../store/portal-tables.js";
import {
  countUnpaidPurchases,
  findPurchase,
  type Purchase,
  purchaseOfOrder,
  purchaseOfSession,
  reholdPurchase,
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
  if (!(await takeOfferingUnits(trx, { offeringId: offering.id, units }))) {
    const current = await findOffering(trx, offering.id);
    if (current?.status !== "open") throw offeringNotOpen(current?.status ?? "closed");
    throw problem("insufficient_units", `${current.units_available} unit(s) are available; ${units} were asked for.`, {
      unitsAvailable: current.units_available,
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
    throw problem(
      "investor_limit_exceeded",
      `An investor may hold at most ${offering.max_units_per_investor} unit(s) of this offering, reserved or bought.`,
      { maxUnitsPerInvestor: offering.max_units_per_investor },
    );
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
    throw problem(
      "too_many_open_purchases",
      `A wallet may hold at most ${MAX_OPEN_PURCHASES_PER_INVESTOR} unpaid purchases of one offering; pay one or let it expire.`,
      { maxOpenPurchases: MAX_OPEN_PURCHASES_PER_INVESTOR },
    );
  }
  const eligibility = await findEligibility(trx, params.investor);
  if (eligibility?.kyc_status === "approved") return;
  const held = await unpaidUnitsOfUnverified(trx, offering.id);
  const cap = Math.max(offering.max_units_per_investor, Math.ceil((offering.total_units * UNVERIFIED_HOLD_PERCENT) / 100));
  if (held + params.units > cap) {
    throw problem(
      "unverified_hold_limit",
      `Wallets without approved KYC may together hold at most ${cap} unpaid unit(s) of this offering. Complete KYC, or retry when reservations expire.`,
      { unverifiedHoldLimit: cap },
    );
  }
}

export function offeringNotOpen(status: string): ProblemError {
  return new ProblemError({
    status: 409,
    code: status === "paused" ? "offering_paused" : "offering_not_open",
    title: "The offering is not open for purchases",
    detail: `The offering is ${status}.`,
    extensions: { offeringStatus: status },
  });
}

/** Gives a purchase's units back to its offering, once (the guarded UPDATE on `released_at`). */
export async function releasePurchaseUnits(trx: Kysely<Database>, purchaseId: string, now = Date.now()): Promise<boolean> {
  const purchase = await findPurchase(trx, purchaseId);
  if (purchase === undefined) return false;
  return givePurchaseUnitsBack(trx, { purchase, now, transition: "release" });
}

/**
 * A fully refunded RWA purchase gives its units back to its offering (SPEC 15,
 * docs/refunds.md), once, in the refund's transaction: the offering can sell them
 * again (a closed offering stays closed), the investor's position shrinks and the
 * purchase leaves the holder register. False when the order is no RWA purchase's or
 * its units were already returned.
 */
export async function returnRefundedPurchaseUnits(
  trx: Kysely<Database>,
  params: { orderId: string; now: number },
): Promise<boolean> {
  const purchase = await purchaseOfOrder(trx, params.orderId);
  if (purchase === undefined) return false;
  return givePurchaseUnitsBack(trx, { purchase, now: params.now, transition: "refund" });
}

async function givePurchaseUnitsBack(
  trx: Kysely<Database>,
  params: { purchase: Purchase; now: number; transition: "release" | "refund" },
): Promise<boolean> {
  const { purchase, now, transition } = params;
  if (purchase.releasedAt !== null) return false;
  if (!(await releasePurchase(trx, { purchase, now, transition }))) return false;
  await returnOfferingUnits(trx, { offeringId: purchase.offeringId, units: purchase.units });
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
    await closeSoldOutOffering(db, { offeringId: offering.offeringId, now });
  }
}

/**
 * The rules of a fresh purchase, applied to a payment attached by hand (by the
 * issuer's partner through `/v1/payments/.../attach`, or by an admin) to an RWA
 * purchase, in the attach's transaction (docs/security.md, issue 24):
 *
 * - the payer: only the investor's own wallet settles a purchase (`409 wrong_payer`);
 * - compliance now: the investor, and a recipient other than the investor, must pass
 *   the offering's rules at the time of the attach (`403 investor_not_eligible`,
 *   `403 recipient_not_eligible`, with `reasons`);
 * - the units: a purchase whose reservation was released takes its units from the
 *   offering again, guarded as a reservation is (never below zero, never past the
 *   per-investor limit), and is held again; with too few units left the attach is
 *   refused with `409 offering_sold_out`, on a paused or closed offering (or past its
 *   `closesAt`) with `offering_paused` / `offering_not_open`.
 *
 * The unpaid-hold caps of a fresh purchase (open purchases per wallet, the share of
 * unverified wallets) are not applied: they bound units held *unpaid*, and an attached
 * purchase is paid in the same transaction. A refusal leaves the payment unresolved,
 * for its partner to mark for refund.
 */
export async function reserveForAttachedPayment(
  trx: Kysely<Database>,
  params: { session: CheckoutSession; payment: Pick<Payment, "from">; now: number },
): Promise<void> {
  const { session, payment, now } = params;
  if (session.kind !== "rwa") return;
  if (session.requiredPayer !== null && !isAddressEqual(payment.from, session.requiredPayer)) {
    throw new ProblemError({
      status: 409,
      code: "wrong_payer",
      title: "Only the investor's own wallet can pay this purchase",
      detail: `This transfer came from ${payment.from}; the purchase is paid only from the investor's wallet ${session.requiredPayer}. Mark the payment for refund.`,
    });
  }
  const purchase = await purchaseOfSession(trx, session.id);
  if (purchase === undefined) return;
  const offering = await findOffering(trx, purchase.offeringId);
  if (offering === undefined) throw offeringNotOpen("closed");
  const investor = purchase.investor.toLowerCase();
  const reasons = ineligibilityReasons(await findEligibility(trx, investor), offering, now);
  if (reasons.length > 0) {
    throw problem(
      "investor_not_eligible",
      `The investor ${purchase.investor} fails this offering's rules now: ${reasons.join(", ")}. Mark the payment for refund.`,
      { reasons },
    );
  }
  if (!isAddressEqual(purchase.recipient, purchase.investor)) {
    const recipientReasons = ineligibilityReasons(await findEligibility(trx, purchase.recipient.toLowerCase()), offering, now);
    if (recipientReasons.length > 0) {
      throw problem(
        "recipient_not_eligible",
        `The recipient ${purchase.recipient} fails this offering's rules now: ${recipientReasons.join(", ")}. Mark the payment for refund.`,
        { reasons: recipientReasons },
      );
    }
  }
  if (purchase.releasedAt === null) return;
  if (now >= Number(offering.closes_at)) throw offeringNotOpen("closed");
  if (!(await takeOfferingUnits(trx, { offeringId: offering.id, units: purchase.units }))) {
    const current = await findOffering(trx, offering.id);
    if (current !== undefined && current.units_available < purchase.units) {
      throw problem(
        "offering_sold_out",
        `The purchase's reservation was released and ${current.units_available} unit(s) are left of the ${purchase.units} it paid for. Mark the payment for refund.`,
        { unitsAvailable: current.units_available, units: purchase.units },
      );
    }
    throw offeringNotOpen(current?.status ?? "closed");
  }
  await trx
    .insertInto("offering_position")
    .values({ offering_id: offering.id, investor, units: 0 })
    .onConflict((oc) => oc.columns(["offering_id", "investor"]).doNothing())
    .execute();
  const capped = await trx
    .updateTable("offering_position")
    .set({ units: sql<number>`units + ${purchase.units}` })
    .where("offering_id", "=", offering.id)
    .where("investor", "=", investor)
    .where(sql<boolean>`units + ${purchase.units} <= ${offering.max_units_per_investor}`)
    .executeTakeFirst();
  if (capped.numUpdatedRows !== 1n) {
    throw problem(
      "investor_limit_exceeded",
      `An investor may hold at most ${offering.max_units_per_investor} unit(s) of this offering, reserved or bought.`,
      { maxUnitsPerInvestor: offering.max_units_per_investor },
    );
  }
  if (!(await reholdPurchase(trx, { purchase }))) throw offeringNotOpen("changing");
}
