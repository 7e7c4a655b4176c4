import { randomUUID } from "node:crypto";
import { type Address, getAddress, type Hex } from "viem";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { claimCertificate } from "../certificates/claim-certificate.js";
import { createSessionInTransaction } from "../checkout/create-session.js";
import { findSession } from "../checkout/session-record.js";
import { paymentView } from "../checkout/session-view.js";
import type { NetworkName } from "../config/networks.js";
import { keysetPage } from "../http/cursor.js";
import { ProblemError, problems } from "../http/problem.js";
import { submitTransactionHash } from "../settlement/submit-transaction-hash.js";
import type { CertificateTable, CheckoutSessionTable } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { RwaPurchaseTable } from "../store/portal-tables.js";
import { findEligibility, ineligibilityReasons } from "./eligibility.js";
import { findOffering, issuerOfOffering } from "./offerings.js";
import type { PortalSettings } from "./portal-settings.js";
import { findInvestorPurchase, insertPurchase, listPurchases } from "./purchase-record.js";
import { offeringNotOpen, reconcileOfferings, reserveUnits } from "./reservations.js";

/** A purchase with what the payment engine knows about it. */
export type PurchaseRecord = {
  purchase: RwaPurchaseTable;
  offeringName: string;
  session: CheckoutSessionTable | undefined;
  /** bytes32 purchase id of the order; the certificate's token id is uint256 of it. */
  onchainPurchaseId: string | null;
  settlement: { transactionHash: string; status: string } | null;
  certificate: CertificateTable | undefined;
};

export function purchaseView(record: PurchaseRecord, options: { frozen?: boolean } = {}) {
  const { purchase, session } = record;
  const payment = session === undefined ? null : paymentView(session);
  return {
    id: purchase.id,
    status: session?.status ?? ("expired" as const),
    offering: { id: purchase.offering_id, name: record.offeringName },
    investor: getAddress(purchase.investor),
    recipient: getAddress(purchase.recipient),
    units: purchase.units,
    unitPriceUsdc: purchase.unit_price_usdc,
    totalPriceUsdc: purchase.total_price_usdc,
    network: purchase.network,
    chainId: purchase.chain_id,
    expiresAt: new Date(Number(session?.expires_at ?? purchase.expires_at)).toISOString(),
    reservation: purchase.released_at === null ? ("held" as const) : ("released" as const),
    payment: payment && {
      tokenAddress: getAddress(payment.tokenAddress),
      recipient: getAddress(payment.recipient),
      amount: payment.amount,
      totalPriceUsdc: payment.totalPriceUsdc,
      chainId: purchase.chain_id,
      decimals: payment.decimals,
      uri: payment.uri,
    },
    settlement: record.settlement,
    onchainPurchaseId: record.onchainPurchaseId,
    certificate: certificateView(record, options.frozen ?? false),
    createdAt: new Date(Number(purchase.created_at)).toISOString(),
  };
}

function certificateView(record: PurchaseRecord, frozen: boolean) {
  const enabled = record.session?.certificate_enabled === 1;
  if (!enabled) return null;
  const certificate = record.certificate;
  return {
    status: certificate?.status ?? ("not_requested" as const),
    frozen,
    tokenId: certificate?.token_id ?? (record.onchainPurchaseId === null ? null : BigInt(record.onchainPurchaseId).toString()),
    contract: certificate === undefined ? null : getAddress(certificate.contract_address),
    owner: certificate?.buyer == null ? null : getAddress(certificate.buyer),
    mintTransactionHash: certificate?.mint_transaction_hash ?? null,
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
    throw new ProblemError({
      status: 409,
      code: "offering_not_open_yet",
      title: "The offering is not open yet",
      detail: `Purchases open at ${new Date(Number(offering.opens_at)).toISOString()}.`,
    });
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
        units: params.units,
        unitPriceUsdc: offering.unit_price_usdc,
      },
      // What the engine fingerprints for idempotency: JSON-safe (no bigint).
      requestBody: { offeringId: offering.id, purchaseId, units: params.units, totalPriceUsdc: total.toString() },
    });
    const purchase: RwaPurchaseTable = {
      id: purchaseId,
      offering_id: offering.id,
      investor,
      recipient,
      units: params.units,
      unit_price_usdc: offering.unit_price_usdc,
      total_price_usdc: total.toString(),
      network: offering.network,
      chain_id: offering.chain_id,
      session_id: created.session.id,
      expires_at: Number(created.session.expires_at),
      released_at: null,
      created_at: now,
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
  };
}

/** Loads purchases with their sessions, orders, payments and certificates (a handful of batched reads). */
export async function loadPurchaseRecords(store: Store, purchases: RwaPurchaseTable[]): Promise<PurchaseRecord[]> {
  if (purchases.length === 0) return [];
  const sessionIds = purchases.map((purchase) => purchase.session_id).filter((id): id is string => id !== null);
  const offeringIds = [...new Set(purchases.map((purchase) => purchase.offering_id))];
  const [sessions, offerings, payments] = await Promise.all([
    sessionIds.length === 0 ? [] : store.selectFrom("checkout_session").selectAll().where("id", "in", sessionIds).execute(),
    store.selectFrom("offering").select(["id", "name"]).where("id", "in", offeringIds).execute(),
    sessionIds.length === 0
      ? []
      : store
          .selectFrom("payment")
          .select(["session_id", "transaction_hash", "status"])
          .where("session_id", "in", sessionIds)
          .where("status", "in", ["pending", "settled"])
          .execute(),
  ]);
  const orderIds = sessions.map((session) => session.order_id);
  const [orders, certificates] = await Promise.all([
    orderIds.length === 0 ? [] : store.selectFrom("orders").select(["id", "purchase_id"]).where("id", "in", orderIds).execute(),
    orderIds.length === 0 ? [] : store.selectFrom("certificate").selectAll().where("order_id", "in", orderIds).execute(),
  ]);
  return purchases.map((purchase) => {
    const session = sessions.find((candidate) => candidate.id === purchase.session_id);
    const payment = payments.find((candidate) => candidate.session_id === purchase.session_id);
    return {
      purchase,
      session,
      offeringName: offerings.find((offering) => offering.id === purchase.offering_id)?.name ?? "",
      onchainPurchaseId: orders.find((order) => order.id === session?.order_id)?.purchase_id ?? null,
      settlement: payment === undefined ? null : { transactionHash: payment.transaction_hash, status: payment.status },
      certificate: certificates.find((certificate) => certificate.order_id === session?.order_id),
    };
  });
}

export { listPurchases } from "./purchase-record.js";

/** The investor's own purchase; anyone else's is "not found". */
export async function ownPurchase(store: Store, investor: string, purchaseId: string): Promise<RwaPurchaseTable> {
  const purchase = await findInvestorPurchase(store, { investor, purchaseId });
  if (purchase === undefined) throw problems.notFound(`Purchase ${purchaseId}`);
  return purchase;
}

export async function sessionOf(store: Store, purchase: RwaPurchaseTable): Promise<CheckoutSessionTable> {
  const session = purchase.session_id === null ? undefined : await findSession(store, purchase.session_id);
  if (session === undefined) {
    throw new ProblemError({
      status: 409,
      code: "purchase_not_payable",
      title: "This purchase cannot be paid",
      detail: "The purchase has no checkout session; start a new purchase.",
    });
  }
  return session;
}

/**
 * The investor tells us the hash of the payment made from their wallet. The engine
 * credits it only if that transfer, as indexed, is from this investor's wallet, of
 * this purchase's exact amount, to its settlement address, on its network and not
 * credited before; the hash only helps find it sooner.
 */
export async function submitWalletSettlement(
  context: AppContext,
  settings: PortalSettings,
  params: { investor: string; purchaseId: string; transactionHash: Hex },
) {
  const purchase = await ownPurchase(context.store, params.investor, params.purchaseId);
  const session = await sessionOf(context.store, purchase);
  const result = await submitTransactionHash(context, { session, transactionHash: params.transactionHash });
  if (result.status === "settled") {
    await reconcileOfferings(context, { offeringIds: [purchase.offering_id], releaseGraceMs: settings.releaseGraceMs });
  }
  return { purchaseId: purchase.id, ...result };
}

/** A voucher for the certificate of a settled purchase, always for the recipient fixed at checkout. */
export async function claimPurchaseCertificate(
  context: AppContext,
  params: { investor: string; purchaseId: string; walletAddress?: string },
) {
  const purchase = await ownPurchase(context.store, params.investor, params.purchaseId);
  const eligibility = await findEligibility(context.store, params.investor);
  if (eligibility?.frozen_at != null) {
    throw new ProblemError({
      status: 403,
      code: "wallet_frozen",
      title: "This wallet is frozen",
      detail: "A compliance officer froze this wallet; certificates cannot be claimed until it is unfrozen.",
    });
  }
  if (params.walletAddress !== undefined && params.walletAddress.toLowerCase() !== purchase.recipient) {
    throw new ProblemError({
      status: 409,
      code: "recipient_mismatch",
      title: "The certificate goes to the recipient chosen at checkout",
      detail: `This purchase's certificate is bound to ${getAddress(purchase.recipient)}.`,
    });
  }
  // The recipient is judged again when the voucher is issued: a freeze or a lost
  // KYC after the purchase must stop the certificate too.
  const offering = await findOffering(context.store, purchase.offering_id);
  if (offering !== undefined) await refuseIneligibleRecipient(context.store, { recipient: purchase.recipient, offering });
  const session = await sessionOf(context.store, purchase);
  return claimCertificate(context, { orderId: session.order_id, walletAddress: getAddress(purchase.recipient) as Address });
}

/** The certificate's wallet must pass the offering's rules as an investor would (frozen, KYC, jurisdiction, accreditation). */
async function refuseIneligibleRecipient(
  store: Store,
  params: { recipient: string; offering: Parameters<typeof ineligibilityReasons>[1]; now?: number },
) {
  const reasons = ineligibilityReasons(await findEligibility(store, params.recipient), params.offering, params.now);
  if (reasons.length === 0) return;
  throw new ProblemError({
    status: 403,
    code: "recipient_not_eligible",
    title: "This wallet may not receive the certificate",
    detail: `The recipient ${getAddress(params.recipient)} fails this offering's eligibility rules: ${reasons.join(", ")}.`,
    extensions: { reasons },
  });
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
    keyOf: (row) => ({ t: Number(row.created_at), id: row.id }),
    view: async (rows) =>
      (await loadPurchaseRecords(store, rows)).map((record) => purchaseView(record, { frozen: params.frozen })),
  });
}
