import type { AppContext } from "../app-context.js";
import { findSession } from "../checkout/session-record.js";
import { problem, problems } from "../http/problem.js";
import { findOffering } from "../offerings/offerings.js";
import { type CreatedRefund, createRefund, listRefunds } from "../refunds/refunds.js";
import type { IssuerTable } from "../store/portal-tables.js";
import type { RefundReason } from "../store/refund-tables.js";
import { findPurchase, type Purchase } from "./purchase-record.js";

/**
 * An issuer refunds an RWA purchase of one of its offerings (SPEC 15, docs/refunds.md
 * "Issuers"). The refund is an ordinary refund of the purchase's order, owned by the
 * issuer's partner and created by `createRefund`, so every rule of a partner's refund
 * holds as is (the sum of live refunds never exceeds what was paid, idempotency, the
 * events): this module only decides which purchase the issuer may refund and where
 * the money goes. It goes back to the investor's wallet that paid (`destination:
 * "payer"`): only that wallet can settle a purchase, so it is the investor's own.
 * When the order becomes fully refunded, the purchase's units return to the offering
 * and its certificate is revoked (`onOrderFullyRefunded`).
 */

/** The purchase, if it is of one of this issuer's offerings; another issuer's is as missing as none. */
export async function issuerPurchase(
  context: Pick<AppContext, "store">,
  params: { issuer: Pick<IssuerTable, "id">; purchaseId: string },
): Promise<Purchase> {
  const purchase = await findPurchase(context.store, params.purchaseId);
  const offering = purchase === undefined ? undefined : await findOffering(context.store, purchase.offeringId);
  if (purchase === undefined || offering?.issuer_id !== params.issuer.id) {
    throw problems.notFound(`Purchase ${params.purchaseId}`);
  }
  return purchase;
}

export async function refundPurchase(
  context: AppContext,
  params: {
    issuer: Pick<IssuerTable, "id">;
    purchaseId: string;
    amount?: bigint;
    reason: RefundReason;
    note?: string;
    idempotencyKey: string;
    requestHash: string;
  },
): Promise<CreatedRefund> {
  const purchase = await issuerPurchase(context, params);
  const session = purchase.sessionId === null ? undefined : await findSession(context.store, purchase.sessionId);
  if (session === undefined || session.status !== "settled") {
    throw problem(
      "purchase_not_paid",
      `This purchase is ${session?.status.replaceAll("_", " ") ?? "without a payment"}: only a settled purchase can be refunded.`,
      { purchaseStatus: session?.status ?? "expired" },
    );
  }
  return createRefund(context, {
    partnerId: session.partnerId,
    orderId: session.orderId,
    amount: params.amount,
    reason: params.reason,
    note: params.note,
    destination: "payer",
    idempotencyKey: params.idempotencyKey,
    requestHash: params.requestHash,
  });
}

/** The refunds of one of the issuer's purchases, newest first (one page; its order's refunds). */
export async function purchaseRefunds(
  context: Pick<AppContext, "store">,
  params: { issuer: Pick<IssuerTable, "id" | "partner_id">; purchaseId: string; cursor?: string; limit: number },
) {
  const purchase = await issuerPurchase(context, params);
  const session = purchase.sessionId === null ? undefined : await findSession(context.store, purchase.sessionId);
  if (session === undefined) return { data: [], nextCursor: null };
  return listRefunds(context.store, {
    partnerId: params.issuer.partner_id,
    orderId: session.orderId,
    cursor: params.cursor,
    limit: params.limit,
  });
}
