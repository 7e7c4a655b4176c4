import { randomUUID } from "node:crypto";
import { getAddress, isAddressEqual } from "viem";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { type Certificate, certificatesOfOrders } from "../certificates/certificate-record.js";
import { claimCertificate } from "../certificates/claim-certificate.js";
import { createSessionInTransaction } from "../checkout/create-session.js";
import { type CheckoutSession, findSession, sessionsByIds } from "../checkout/session-record.js";
import { eip681Uri } from "../checkout/session-view.js";
import { findEligibility, ineligibilityReasons } from "../compliance/eligibility.js";
import type { NetworkName } from "../config/networks.js";
import type { PortalSettings } from "../config/option-types.js";
import { keysetPage } from "../http/cursor.js";
import { ProblemError, problem, problems } from "../http/problem.js";
import { findOffering, issuerOfOffering, offeringNames } from "../offerings/offerings.js";
import { purchaseIdsOfOrders } from "../orders/order-record.js";
import { payingPaymentsOfSessions } from "../payments/payment-record.js";
import { type RefundSummary, refundSummaries } from "../refunds/refunds.js";
import type { Store } from "../store/open-store.js";
import { checksum } from "../values/checksum-address.js";
import { USDC_DECIMALS } from "../values/money.js";
import { findInvestorPurchase, insertPurchase, listPurchases, type Purchase, reservationOf } from "./purchase-record.js";
import { offeringNotOpen, reconcileOfferings, reserveUnits } from "./reservations.js";

/** A purchase with what the payment engine knows about it. */
export type PurchaseRecord = {
  purchase: Purchase;
  offeringName: string;
  session: CheckoutSession | undefined;
  /** bytes32 purchase id of the order; the certificate's token id is uint256 of it. */
  onchainPurchaseId: string | null;
  settlement: { transactionHash: string; status: string } | null;
  certificate: Certificate | undefined;
  refunds: RefundSummary;
};

const NO_REFUNDS: RefundSummary = { amountRefunded: "0", amountRefundPending: "0", refundStatus: "none" };

export function purchaseView(record: PurchaseRecord, options: { frozen?: boolean } = {}) {
  const { purchase, session } = record;
  return {
    id: purchase.id,
    status: session?.status ?? ("expired" as const),
    offering: { id: purchase.offeringId, name: record.offeringName },
    investor: purchase.investor,
    recipient: purchase.recipient,
    units: purchase.units,
    unitPriceUsdc: purchase.unitPriceUsdc.toString(),
    totalPriceUsdc: purchase.totalPriceUsdc.toString(),
    network: purchase.network,
    chainId: purchase.chainId,
    expiresAt: new Date(session?.expiresAt ?? purchase.expiresAt).toISOString(),
    reservation: reservationOf(purchase),
    payment: session === undefined ? null : paymentOf(session, purchase.chainId),
    settlement: record.settlement,
    onchainPurchaseId: record.onchainPurchaseId,
    certificate: certificateView(record, options.frozen ?? false),
    ...record.refunds,
    createdAt: new Date(purchase.createdAt).toISOString(),
  };
}

/** What the investor's wallet must send: the session's token, address and exact amount, and its EIP-681 link. */
function paymentOf(session: CheckoutSession, chainId: number) {
  const tokenAddress = session.tokenAddress;
  const recipient = session.paymentAddress;
  const amount = session.amountDue.toString();
  return {
    tokenAddress,
    recipient,
    amount,
    totalPriceUsdc: session.totalPriceUsdc.toString(),
    chainId,
    decimals: USDC_DECIMALS as 6,
    uri: eip681Uri({ token: tokenAddress, chainId: session.chainId, recipient, amount }),
  };
}

function certificateView(record: PurchaseRecord, frozen: boolean) {
  if (record.session?.certificateEnabled !== true) return null;
  const certificate = record.certificate;
  return {
    status: certificate?.status ?? ("not_requested" as const),
    frozen,
    tokenId:
      certificate?.tokenId.toString() ?? (record.onchainPurchaseId === null ? null : BigInt(record.onchainPurchaseId).toString()),
    contract: certificate?.contract ?? null,
    owner: certificate?.buyer ?? null,
    mintTransactionHash: certificate?.mintTransactionHash ?? null,
  };
}

/**
 * Starts an investor's purchase: checks the offering and the investor's
 * eligibility, reserves the units (guarded UPDATEs, no oversubscription), then
 * asks the payment engine for a checkout session that only a transfer from the
 * investor's wallet, of the displayed amount, to the offering's settlement
 * address can settle, all in one transaction.
 */
export async function startPurchase(
  context: AppContext,
  settings: PortalSettings,
  params: { investor: string; offeringId: string; units: number; recipient?: string },
): Promise<PurchaseRecord> {
  const investor = params.investor.toLowerCase();
  const offering = await findOffering(context.store, params.offeringId);
  if (
    offering === undefined ||
    offering.status === "draft" ||
    offering.status === "in_review" ||
    offering.status === "rejected"
  ) {
    throw problems.notFound(`Offering ${params.offeringId}`);
  }
  await reconcileOfferings(context, { offeringIds: [offering.id], releaseGraceMs: settings.releaseGraceMs });
  const now = Date.now();
  if (offering.status !== "open") throw offeringNotOpen(offering.status);
  if (now < Number(offering.opens_at)) {
    throw problem("offering_not_open_yet", `Purchases open at ${new Date(Number(offering.opens_at)).toISOString()}.`);
  }
  if (now >= Number(offering.closes_at)) throw offeringNotOpen("closed");
  if (params.units < offering.min_units || params.units > offering.max_units_per_investor) {
    throw problems.invalidRequest(
      `\`units\` must be between ${offering.min_units} and ${offering.max_units_per_investor} for this offering.`,
    );
  }
  const reasons = ineligibilityReasons(await findEligibility(context.store, investor), offering, now);
  if (reasons.length > 0) {
    throw new ProblemError({
      status: 403,
      code: reasons.includes("wallet_frozen") ? "wallet_frozen" : "not_eligible",
      title: "This wallet may not buy into this offering",
      detail: `Eligibility check failed: ${reasons.join(", ")}.`,
      extensions: { reasons },
    });
  }

  const recipient = (params.recipient ?? investor).toLowerCase();
  if (recipient !== investor) {
    await refuseIneligibleRecipient(context.store, { recipient, offering, now });
  }

  const issuer = await issuerOfOffering(context.store, offering);
  const total = BigInt(offering.unit_price_usdc) * BigInt(params.units);
  const purchaseId = `pur_${randomUUID().replaceAll("-", "")}`;
  // One transaction: the units, the checkout session and the purchase exist together or
  // not at all (a refusal of the session, such as no free payment reference, reserves nothing).
  const { purchase, created } = await context.store.transaction().execute(async (trx) => {
    await reserveUnits(trx, { offering, investor, units: params.units });
    const created = await createSessionInTransaction(trx, context, {
      partnerId: issuer.partner_id,
      kind: "rwa",
      network: offering.network as NetworkName,
      externalOrderId: purchaseId,
      externalProductId: offering.id,
      productName: offering.name,
      productCategory: "rwa",
      quantity: params.units,
      totalPriceUsdc: total,
      shippingRequired: false,
      certificateEnabled: offering.certificate_enabled === 1,
      expiresInSeconds: settings.reservationSeconds,
      requiredPayer: getAddress(investor),
      paymentAddresses: [offering.settlement_address],
      metadata: {
        offeringId: offering.id,
        purchaseId,
        units: String(params.units),
        unitPriceUsdc: offering.unit_price_usdc,
      },
      // What the engine fingerprints for idempotency: JSON-safe (no bigint).
      requestBody: { offeringId: offering.id, purchaseId, units: params.units, totalPriceUsdc: total.toString() },
    });
    const { session } = created;
    const purchase: Purchase = {
      id: purchaseId,
      offeringId: offering.id,
      investor: checksum(investor),
      recipient: checksum(recipient),
      units: params.units,
      unitPriceUsdc: BigInt(offering.unit_price_usdc),
      totalPriceUsdc: total,
      network: offering.network,
      chainId: offering.chain_id,
      sessionId: session.id,
      expiresAt: session.expiresAt,
      releasedAt: null,
      createdAt: now,
    };
    await insertPurchase(trx, purchase);
    return { purchase, created };
  });
  return {
    purchase,
    offeringName: offering.name,
    session: created.session,
    onchainPurchaseId: created.purchaseId,
    settlement: null,
    certificate: undefined,
    refunds: NO_REFUNDS,
  };
}

/** Loads purchases with their sessions, orders, payments and certificates (a handful of batched reads). */
export async function loadPurchaseRecords(store: Store, purchases: Purchase[]): Promise<PurchaseRecord[]> {
  if (purchases.length === 0) return [];
  const sessionIds = purchases.map((purchase) => purchase.sessionId).filter((id): id is string => id !== null);
  const offeringIds = [...new Set(purchases.map((purchase) => purchase.offeringId))];
  const [sessions, offerings, payments] = await Promise.all([
    sessionsByIds(store, sessionIds),
    offeringNames(store, offeringIds),
    payingPaymentsOfSessions(store, sessionIds),
  ]);
  const orderIds = sessions.map((session) => session.orderId);
  const [orders, certificates] = await Promise.all([purchaseIdsOfOrders(store, orderIds), certificatesOfOrders(store, orderIds)]);
  const refunds = await refundSummaries(
    store,
    sessions.map((session) => ({
      orderId: session.orderId,
      paid: payments.find((candidate) => candidate.sessionId === session.id && candidate.status === "settled")?.amount ?? null,
    })),
  );
  return purchases.map((purchase) => {
    const session = sessions.find((candidate) => candidate.id === purchase.sessionId);
    const payment = payments.find((candidate) => candidate.sessionId === purchase.sessionId);
    return {
      purchase,
      session,
      offeringName: offerings.find((offering) => offering.id === purchase.offeringId)?.name ?? "",
      onchainPurchaseId: orders.find((order) => order.id === session?.orderId)?.purchaseId ?? null,
      settlement: payment === undefined ? null : { transactionHash: payment.transactionHash, status: payment.status },
      certificate: certificates.find((certificate) => certificate.orderId === session?.orderId),
      refunds: (session === undefined ? undefined : refunds.get(session.orderId)) ?? NO_REFUNDS,
    };
  });
}

export { listPurchases } from "./purchase-record.js";

/** The investor's own purchase; anyone else's is "not found". */
export async function ownPurchase(store: Store, investor: string, purchaseId: string): Promise<Purchase> {
  const purchase = await findInvestorPurchase(store, { investor, purchaseId });
  if (purchase === undefined) throw problems.notFound(`Purchase ${purchaseId}`);
  return purchase;
}

export async function sessionOf(store: Store, purchase: Purchase): Promise<CheckoutSession> {
  const session = purchase.sessionId === null ? undefined : await findSession(store, purchase.sessionId);
  if (session === undefined) {
    throw problem("purchase_not_payable", "The purchase has no checkout session; start a new purchase.");
  }
  return session;
}

/** A voucher for the certificate of a settled purchase, always for the recipient fixed at checkout. */
export async function claimPurchaseCertificate(
  context: AppContext,
  params: { investor: string; purchaseId: string; walletAddress?: string },
) {
  const purchase = await ownPurchase(context.store, params.investor, params.purchaseId);
  const eligibility = await findEligibility(context.store, params.investor);
  if (eligibility?.frozen_at != null) {
    throw problem(
      "wallet_frozen",
      "A compliance officer froze this wallet; certificates cannot be claimed until it is unfrozen.",
    );
  }
  if (params.walletAddress !== undefined && !isAddressEqual(checksum(params.walletAddress), purchase.recipient)) {
    throw problem("recipient_mismatch", `This purchase's certificate is bound to ${purchase.recipient}.`);
  }
  // The recipient is judged again when the voucher is issued: a freeze or a lost
  // KYC after the purchase must stop the certificate too.
  const offering = await findOffering(context.store, purchase.offeringId);
  if (offering !== undefined) await refuseIneligibleRecipient(context.store, { recipient: purchase.recipient, offering });
  const session = await sessionOf(context.store, purchase);
  return claimCertificate(context, { orderId: session.orderId, walletAddress: purchase.recipient });
}

/** The certificate's wallet must pass the offering's rules as an investor would (frozen, KYC, jurisdiction, accreditation). */
async function refuseIneligibleRecipient(
  store: Store,
  params: { recipient: string; offering: Parameters<typeof ineligibilityReasons>[1]; now?: number },
) {
  const reasons = ineligibilityReasons(await findEligibility(store, params.recipient), params.offering, params.now);
  if (reasons.length === 0) return;
  throw problem(
    "recipient_not_eligible",
    `The recipient ${getAddress(params.recipient)} fails this offering's eligibility rules: ${reasons.join(", ")}.`,
    { reasons },
  );
}

/**
 * Purchases of one investor or one offering, newest first, one page at a time
 * (the paging helper's cursor `{ t, id }`), as the portals show them.
 */
export function pageOfPurchases(
  store: Store,
  params: { investor?: string; offeringId?: string; cursor?: string; limit: number; frozen?: boolean },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: z.object({ t: z.number().int(), id: z.string() }),
    fetch: (after, take) =>
      listPurchases(store, { investor: params.investor, offeringId: params.offeringId, after, limit: take }),
    keyOf: (purchase) => ({ t: purchase.createdAt, id: purchase.id }),
    view: async (rows) =>
      (await loadPurchaseRecords(store, rows)).map((record) => purchaseView(record, { frozen: params.frozen })),
  });
}
