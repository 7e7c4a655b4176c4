import { randomUUID } from "node:crypto";
import { type Kysely, sql } from "kysely";
import { getAddress } from "viem";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { appendAudit, type PortalActor } from "../audit/audit-log.js";
import { jurisdictionList } from "../compliance/eligibility.js";
import { issuerById } from "../compliance/issuers.js";
import { enabledNetwork } from "../config/enabled-networks.js";
import { keysetPage } from "../http/cursor.js";
import { problem, problems } from "../http/problem.js";
import { insertPaymentAddress, paymentAddressOwner } from "../partners/payment-addresses.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { IssuerTable, OfferingStatus, OfferingTable } from "../store/portal-tables.js";

/** An offering as an issuer drafts it (docs/portals.md), amounts already parsed. */
export type OfferingInput = {
  name: string;
  description: string;
  network: string;
  assetToken?: string | null;
  unitPriceUsdc: bigint;
  minUnits: number;
  maxUnitsPerInvestor: number;
  totalUnits: number;
  opensAt: number;
  closesAt: number;
  settlementAddress: string;
  certificate: { enabled: boolean };
  eligibility: {
    requireKyc: boolean;
    jurisdictions?: string[];
    blockedJurisdictions?: string[];
    requireAccreditation?: boolean;
  };
};

/** States anyone may see; drafts, reviews and rejections stay between issuer and admin. */
export const PUBLIC_OFFERING_STATUSES = ["open", "paused", "closed"] as const satisfies readonly OfferingStatus[];

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function offeringView(offering: OfferingTable, issuer: Pick<IssuerTable, "id" | "name">) {
  return {
    id: offering.id,
    status: offering.status,
    issuer: { id: issuer.id, name: issuer.name },
    name: offering.name,
    description: offering.description,
    network: offering.network,
    chainId: offering.chain_id,
    assetToken: offering.asset_token === null ? null : getAddress(offering.asset_token),
    unitPriceUsdc: offering.unit_price_usdc,
    minUnits: offering.min_units,
    maxUnitsPerInvestor: offering.max_units_per_investor,
    totalUnits: offering.total_units,
    unitsAvailable: offering.units_available,
    opensAt: iso(offering.opens_at) as string,
    closesAt: iso(offering.closes_at) as string,
    settlementAddress: getAddress(offering.settlement_address),
    certificate: { enabled: offering.certificate_enabled === 1 },
    eligibility: {
      requireKyc: offering.require_kyc === 1,
      jurisdictions: offering.allowed_jurisdictions === null ? null : jurisdictionList(offering.allowed_jurisdictions),
      blockedJurisdictions: jurisdictionList(offering.blocked_jurisdictions),
      requireAccreditation: offering.require_accreditation === 1,
    },
    reviewReason: offering.review_reason,
    pausedBy: offering.paused_by,
    closeReason: offering.close_reason,
    submittedAt: iso(offering.submitted_at),
    approvedAt: iso(offering.approved_at),
    createdAt: iso(offering.created_at) as string,
    updatedAt: iso(offering.updated_at) as string,
  };
}

/**
 * Checks what only the service can judge: the network is enabled and the
 * settlement address is one the indexer watches there (a payment to any other
 * address would never be seen), and no other partner receives at that address.
 */
async function validateOffering(
  context: Pick<AppContext, "networks">,
  db: Kysely<Database>,
  issuer: IssuerTable,
  input: OfferingInput,
) {
  const network = enabledNetwork(context, input.network);
  const settlementAddress = input.settlementAddress.toLowerCase();
  if (!network.paymentAddresses.some((address) => address.toLowerCase() === settlementAddress)) {
    throw problem(
      "settlement_address_not_watched",
      `The indexer only records USDC transfers to the payment addresses configured for ${network.name} ` +
        `(${network.paymentAddresses.join(", ")}); a payment to any other address would never be seen.`,
      { watchedAddresses: network.paymentAddresses },
    );
  }
  const owner = await paymentAddressOwner(db, { chainId: network.chainId, address: settlementAddress });
  if (owner !== undefined && owner !== issuer.partner_id) {
    throw problem("settlement_address_taken", "Choose a watched payment address that no other partner receives payments at.");
  }
  const rules: [boolean, string][] = [
    [input.unitPriceUsdc > 0n, "`unitPriceUsdc` must be more than 0"],
    [input.minUnits >= 1, "`minUnits` must be at least 1"],
    [input.maxUnitsPerInvestor >= input.minUnits, "`maxUnitsPerInvestor` must be at least `minUnits`"],
    [input.totalUnits >= input.minUnits, "`totalUnits` must be at least `minUnits`"],
    [input.closesAt > input.opensAt, "`closesAt` must be after `opensAt`"],
  ];
  const failed = rules.filter(([ok]) => !ok).map(([, message]) => message);
  if (failed.length > 0) throw problems.invalidRequest(`${failed.join("; ")}.`);
  return network;
}

function offeringColumns(input: OfferingInput, chainId: number) {
  const codes = (list: string[] | undefined) =>
    list === undefined ? null : JSON.stringify(list.map((code) => code.toUpperCase()));
  return {
    name: input.name,
    description: input.description,
    network: input.network,
    chain_id: chainId,
    asset_token: input.assetToken?.toLowerCase() ?? null,
    unit_price_usdc: input.unitPriceUsdc.toString(),
    min_units: input.minUnits,
    max_units_per_investor: input.maxUnitsPerInvestor,
    total_units: input.totalUnits,
    units_available: input.totalUnits,
    opens_at: input.opensAt,
    closes_at: input.closesAt,
    settlement_address: input.settlementAddress.toLowerCase(),
    certificate_enabled: input.certificate.enabled ? 1 : 0,
    require_kyc: input.eligibility.requireKyc ? 1 : 0,
    require_accreditation: input.eligibility.requireAccreditation ? 1 : 0,
    allowed_jurisdictions: codes(input.eligibility.jurisdictions),
    blocked_jurisdictions: codes(input.eligibility.blockedJurisdictions),
  };
}

export async function createOfferingDraft(
  context: Pick<AppContext, "store" | "networks">,
  actor: PortalActor,
  issuer: IssuerTable,
  input: OfferingInput,
): Promise<OfferingTable> {
  return context.store.transaction().execute(async (trx) => {
    const network = await validateOffering(context, trx, issuer, input);
    const now = Date.now();
    const offering: OfferingTable = {
      id: `off_${randomUUID().replaceAll("-", "")}`,
      issuer_id: issuer.id,
      status: "draft",
      ...offeringColumns(input, network.chainId),
      review_reason: null,
      paused_by: null,
      close_reason: null,
      submitted_at: null,
      approved_at: null,
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto("offering").values(offering).execute();
    await appendAudit(trx, {
      actor,
      action: "offering.draft",
      target: { type: "offering", id: offering.id },
      details: {
        name: input.name,
        network: input.network,
        totalUnits: input.totalUnits,
        unitPriceUsdc: offering.unit_price_usdc,
      },
      now,
    });
    return offering;
  });
}

/** Replaces a draft (or a rejected offering, before it is submitted again). */
export async function updateOfferingDraft(
  context: Pick<AppContext, "store" | "networks">,
  actor: PortalActor,
  issuer: IssuerTable,
  offeringId: string,
  input: OfferingInput,
): Promise<OfferingTable> {
  return context.store.transaction().execute(async (trx) => {
    await ownOffering(trx, issuer, offeringId);
    const network = await validateOffering(context, trx, issuer, input);
    const now = Date.now();
    const result = await trx
      .updateTable("offering")
      .set({ ...offeringColumns(input, network.chainId), updated_at: now })
      .where("id", "=", offeringId)
      .where("status", "in", ["draft", "rejected"])
      .executeTakeFirst();
    if (result.numUpdatedRows !== 1n) await refuseTransition(trx, offeringId, "edit");
    await appendAudit(trx, { actor, action: "offering.update", target: { type: "offering", id: offeringId }, now });
    return ownOffering(trx, issuer, offeringId);
  });
}

/** The issuer's own offering; another issuer's is "not found", never "forbidden". */
export async function ownOffering(
  db: Kysely<Database>,
  issuer: Pick<IssuerTable, "id">,
  offeringId: string,
): Promise<OfferingTable> {
  const offering = await db
    .selectFrom("offering")
    .selectAll()
    .where("id", "=", offeringId)
    .where("issuer_id", "=", issuer.id)
    .executeTakeFirst();
  if (offering === undefined) throw problems.notFound(`Offering ${offeringId}`);
  return offering;
}

export async function findOffering(db: Kysely<Database>, offeringId: string): Promise<OfferingTable | undefined> {
  return db.selectFrom("offering").selectAll().where("id", "=", offeringId).executeTakeFirst();
}

/** The names of these offerings, by id (a list of purchases names what each bought). */
export async function offeringNames(db: Kysely<Database>, offeringIds: string[]): Promise<{ id: string; name: string }[]> {
  if (offeringIds.length === 0) return [];
  return db.selectFrom("offering").select(["id", "name"]).where("id", "in", offeringIds).execute();
}

async function refuseTransition(db: Kysely<Database>, offeringId: string, action: string): Promise<never> {
  const offering = await findOffering(db, offeringId);
  if (offering === undefined) throw problems.notFound(`Offering ${offeringId}`);
  throw problem(
    "invalid_offering_state",
    `The offering is ${offering.status}${offering.paused_by === "admin" && action === "resume" ? " by an admin" : ""}; it cannot ${action} now.`,
    { offeringStatus: offering.status },
  );
}

type Transition = {
  action: string;
  auditAction: string;
  from: OfferingStatus[];
  to: OfferingStatus;
  set?: Partial<OfferingTable>;
  /** Extra guard, e.g. only the party that paused may resume. */
  pausedBy?: string[];
  details?: Record<string, unknown>;
};

/** One guarded UPDATE per state change: concurrent actions cannot both win. */
async function transition(
  store: Store,
  actor: PortalActor,
  offeringId: string,
  issuer: Pick<IssuerTable, "id"> | undefined,
  change: Transition,
  before?: (trx: Kysely<Database>, offering: OfferingTable) => Promise<void>,
): Promise<OfferingTable> {
  return store.transaction().execute(async (trx) => {
    const offering = issuer === undefined ? await findOffering(trx, offeringId) : await ownOffering(trx, issuer, offeringId);
    if (offering === undefined) throw problems.notFound(`Offering ${offeringId}`);
    if (before !== undefined && change.from.includes(offering.status)) await before(trx, offering);
    const now = Date.now();
    let update = trx
      .updateTable("offering")
      .set({ ...change.set, status: change.to, updated_at: now })
      .where("id", "=", offeringId)
      .where("status", "in", change.from);
    if (change.pausedBy !== undefined) update = update.where("paused_by", "in", change.pausedBy);
    const result = await update.executeTakeFirst();
    if (result.numUpdatedRows !== 1n) await refuseTransition(trx, offeringId, change.action);
    await appendAudit(trx, {
      actor,
      action: change.auditAction,
      target: { type: "offering", id: offeringId },
      details: { from: offering.status, to: change.to, ...change.details },
      now,
    });
    return (await findOffering(trx, offeringId)) as OfferingTable;
  });
}

export function submitOffering(store: Store, actor: PortalActor, issuer: IssuerTable, offeringId: string) {
  return transition(store, actor, offeringId, issuer, {
    action: "be submitted for review",
    auditAction: "offering.submit",
    from: ["draft", "rejected"],
    to: "in_review",
    set: { submitted_at: Date.now(), review_reason: null },
  });
}

/**
 * Opens an offering. Its settlement address is recorded as a payment address of
 * the issuer's partner (unless it already is), so unmatched transfers to it are
 * attributed to that issuer and no other partner can claim it later.
 */
export function approveOffering(context: Pick<AppContext, "store" | "networks">, actor: PortalActor, offeringId: string) {
  return transition(
    context.store,
    actor,
    offeringId,
    undefined,
    { action: "be approved", auditAction: "offering.approve", from: ["in_review"], to: "open", set: { approved_at: Date.now() } },
    async (trx, offering) => {
      const issuer = await issuerOfOffering(trx, offering);
      await claimSettlementAddress(context, trx, issuer, offering);
    },
  );
}

async function claimSettlementAddress(
  context: Pick<AppContext, "networks">,
  trx: Kysely<Database>,
  issuer: IssuerTable,
  offering: OfferingTable,
) {
  const network = context.networks.find((candidate) => candidate.chainId === offering.chain_id);
  if (network === undefined || !network.paymentAddresses.some((a) => a.toLowerCase() === offering.settlement_address)) {
    throw problem(
      "settlement_address_not_watched",
      "The service's configuration changed since the draft: the indexer no longer watches this settlement address.",
    );
  }
  await insertPaymentAddress(trx, {
    partnerId: issuer.partner_id,
    network: offering.network,
    chainId: offering.chain_id,
    address: offering.settlement_address,
  });
  // Inserted just above when missing, so it has an owner: the issuer's partner, or another that held it first.
  const owner = await paymentAddressOwner(trx, { chainId: offering.chain_id, address: offering.settlement_address });
  if (owner !== issuer.partner_id) {
    throw problem("settlement_address_taken", "Reject the offering and ask the issuer for another watched payment address.");
  }
}

export function rejectOffering(store: Store, actor: PortalActor, offeringId: string, reason: string) {
  return transition(store, actor, offeringId, undefined, {
    action: "be rejected",
    auditAction: "offering.reject",
    from: ["in_review"],
    to: "rejected",
    set: { review_reason: reason },
    details: { reason },
  });
}

/** Pausing stops new purchases; reserved units stay reserved and paid ones stay paid. */
export function pauseOffering(store: Store, actor: PortalActor, offeringId: string, issuer?: IssuerTable, reason?: string) {
  return transition(store, actor, offeringId, issuer, {
    action: "be paused",
    auditAction: "offering.pause",
    from: ["open"],
    to: "paused",
    set: { paused_by: actor.role },
    details: reason === undefined ? {} : { reason },
  });
}

/** An issuer may lift only its own pause; an admin may lift any. */
export function resumeOffering(store: Store, actor: PortalActor, offeringId: string, issuer?: IssuerTable) {
  return transition(store, actor, offeringId, issuer, {
    action: "resume",
    auditAction: "offering.resume",
    from: ["paused"],
    to: "open",
    set: { paused_by: null },
    pausedBy: actor.role === "admin" ? ["admin", "issuer"] : ["issuer"],
  });
}

export function closeOffering(store: Store, actor: PortalActor, offeringId: string, issuer?: IssuerTable, reason?: string) {
  return transition(store, actor, offeringId, issuer, {
    action: "be closed",
    auditAction: "offering.close",
    from: ["open", "paused"],
    to: "closed",
    set: { close_reason: reason ?? `closed_by_${actor.role}`, paused_by: null },
  });
}

const offeringCursor = z.object({ t: z.number().int(), id: z.string() });
export type OfferingCursor = z.infer<typeof offeringCursor>;

/** Newest first, keyset-paged on (created_at, id). */
export async function listOfferings(
  db: Kysely<Database>,
  params: { statuses?: OfferingStatus[]; issuerId?: string; after?: OfferingCursor; limit: number },
): Promise<{ offering: OfferingTable; issuer: Pick<IssuerTable, "id" | "name"> }[]> {
  let query = db
    .selectFrom("offering")
    .innerJoin("issuer", "issuer.id", "offering.issuer_id")
    .selectAll("offering")
    .select("issuer.name as issuer_name")
    .orderBy("offering.created_at", "desc")
    .orderBy("offering.id", "desc")
    .limit(params.limit);
  if (params.statuses !== undefined) query = query.where("offering.status", "in", params.statuses);
  if (params.issuerId !== undefined) query = query.where("offering.issuer_id", "=", params.issuerId);
  const after = params.after;
  if (after !== undefined) {
    query = query.where(({ eb, refTuple, tuple }) =>
      eb(refTuple("offering.created_at", "offering.id"), "<", tuple(after.t, after.id)),
    );
  }
  const rows = await query.execute();
  return rows.map(({ issuer_name, ...offering }) => ({ offering, issuer: { id: offering.issuer_id, name: issuer_name } }));
}

/** One page of offerings as the portals list them, newest first, with the cursor of the next page. */
export async function pageOfOfferings(
  db: Kysely<Database>,
  params: { statuses?: OfferingStatus[]; issuerId?: string; cursor?: string; limit: number },
) {
  const { cursor, limit, ...filter } = params;
  return keysetPage({
    cursor,
    limit,
    key: offeringCursor,
    fetch: (after, take) => listOfferings(db, { ...filter, after, limit: take }),
    keyOf: (row) => ({ t: Number(row.offering.created_at), id: row.offering.id }),
    view: (rows) => rows.map((row) => offeringView(row.offering, row.issuer)),
  });
}

export async function issuerOfOffering(db: Kysely<Database>, offering: OfferingTable): Promise<IssuerTable> {
  return issuerById(db, offering.issuer_id);
}

/**
 * Takes units from an open offering that has them (a reservation, or a released
 * one taken again by an attach): one guarded UPDATE, so units never go below zero
 * under concurrent purchases. False when the offering is not open or has too few.
 */
export async function takeOfferingUnits(trx: Kysely<Database>, params: { offeringId: string; units: number }): Promise<boolean> {
  const taken = await trx
    .updateTable("offering")
    .set({ units_available: sql<number>`units_available - ${params.units}` })
    .where("id", "=", params.offeringId)
    .where("status", "=", "open")
    .where("units_available", ">=", params.units)
    .executeTakeFirst();
  return taken.numUpdatedRows === 1n;
}

/** Gives units back to an offering (a released reservation); the caller guards against giving them twice. */
export async function returnOfferingUnits(trx: Kysely<Database>, params: { offeringId: string; units: number }): Promise<void> {
  await trx
    .updateTable("offering")
    .set({ units_available: sql<number>`units_available + ${params.units}` })
    .where("id", "=", params.offeringId)
    .execute();
}

/** Closes an open or paused offering whose units are all paid for. */
export async function closeSoldOutOffering(db: Kysely<Database>, params: { offeringId: string; now: number }): Promise<void> {
  await db
    .updateTable("offering")
    .set({ status: "closed", close_reason: "sold_out", paused_by: null, updated_at: params.now })
    .where("id", "=", params.offeringId)
    .where("status", "in", ["open", "paused"])
    .execute();
}
