import type { Kysely } from "kysely";
import { type Address, getAddress } from "viem";
import { z } from "zod";
import { appendAudit, type PortalActor } from "../audit/audit-log.js";
import { keysetPage } from "../http/cursor.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { InvestorEligibilityTable, KycStatus, OfferingTable } from "../store/portal-tables.js";

export const KYC_STATUSES = ["pending", "approved", "rejected", "needs_update"] as const satisfies readonly KycStatus[];

/** Why an investor may not buy into an offering; empty when eligible. */
export type IneligibilityReason =
  | "wallet_frozen"
  | "kyc_required"
  | "jurisdiction_unknown"
  | "jurisdiction_not_allowed"
  | "jurisdiction_blocked"
  | "accreditation_required"
  | "accreditation_expired";

export function eligibilityView(address: string, record: InvestorEligibilityTable | undefined) {
  return {
    address: getAddress(address),
    kycStatus: record?.kyc_status ?? ("pending" as const),
    jurisdiction: record?.jurisdiction ?? null,
    accredited: record?.accredited === 1,
    accreditationExpiresAt:
      record?.accreditation_expires_at == null ? null : new Date(Number(record.accreditation_expires_at)).toISOString(),
    frozen: record?.frozen_at != null,
    frozenReason: record?.frozen_reason ?? null,
    updatedAt: record === undefined ? null : new Date(Number(record.updated_at)).toISOString(),
  };
}

export async function findEligibility(db: Kysely<Database>, address: string): Promise<InvestorEligibilityTable | undefined> {
  return db.selectFrom("investor_eligibility").selectAll().where("address", "=", address.toLowerCase()).executeTakeFirst();
}

/** The compliance records of these wallets, by checksummed address (a wallet without one is absent). */
export async function eligibilityOfWallets(
  db: Kysely<Database>,
  addresses: readonly string[],
): Promise<Map<Address, InvestorEligibilityTable>> {
  if (addresses.length === 0) return new Map();
  const lowered = [...new Set(addresses.map((address) => address.toLowerCase()))];
  const rows = await db.selectFrom("investor_eligibility").selectAll().where("address", "in", lowered).execute();
  return new Map(rows.map((row) => [getAddress(row.address), row]));
}

/** The compliance record as the admin sets it (KYC status, jurisdiction, accreditation). Freezing is separate. */
export async function setEligibility(
  store: Store,
  actor: PortalActor,
  params: {
    address: string;
    kycStatus: KycStatus;
    jurisdiction: string | null;
    accredited?: boolean;
    accreditationExpiresAt?: number | null;
  },
): Promise<InvestorEligibilityTable> {
  const address = params.address.toLowerCase();
  return store.transaction().execute(async (trx) => {
    const now = Date.now();
    const values = {
      kyc_status: params.kycStatus,
      jurisdiction: params.jurisdiction?.toUpperCase() ?? null,
      accredited: params.accredited ? 1 : 0,
      accreditation_expires_at: params.accredited ? (params.accreditationExpiresAt ?? null) : null,
      updated_by: actor.address.toLowerCase(),
      updated_at: now,
    };
    await trx
      .insertInto("investor_eligibility")
      .values({ address, ...values, frozen_at: null, frozen_reason: null })
      .onConflict((oc) => oc.column("address").doUpdateSet(values))
      .execute();
    await appendAudit(trx, {
      actor,
      action: "investor.eligibility.set",
      target: { type: "investor", id: address },
      details: {
        kycStatus: values.kyc_status,
        jurisdiction: values.jurisdiction,
        accredited: values.accredited === 1,
        accreditationExpiresAt: values.accreditation_expires_at && new Date(values.accreditation_expires_at).toISOString(),
      },
      now,
    });
    return (await findEligibility(trx, address)) as InvestorEligibilityTable;
  });
}

/** A frozen wallet cannot start purchases or claim certificates; its certificates are shown as frozen. */
export async function setWalletFrozen(
  store: Store,
  actor: PortalActor,
  params: { address: string; frozen: boolean; reason?: string },
): Promise<InvestorEligibilityTable> {
  const address = params.address.toLowerCase();
  return store.transaction().execute(async (trx) => {
    const now = Date.now();
    const values = {
      frozen_at: params.frozen ? now : null,
      frozen_reason: params.frozen ? (params.reason ?? null) : null,
      updated_by: actor.address.toLowerCase(),
      updated_at: now,
    };
    await trx
      .insertInto("investor_eligibility")
      .values({ address, kyc_status: "pending", jurisdiction: null, accredited: 0, accreditation_expires_at: null, ...values })
      .onConflict((oc) => oc.column("address").doUpdateSet(values))
      .execute();
    await appendAudit(trx, {
      actor,
      action: params.frozen ? "investor.freeze" : "investor.unfreeze",
      target: { type: "investor", id: address },
      details: params.frozen ? { reason: params.reason ?? null } : {},
      now,
    });
    return (await findEligibility(trx, address)) as InvestorEligibilityTable;
  });
}

export async function listEligibility(
  store: Store,
  params: { afterAddress?: string; limit: number; kycStatus?: KycStatus; frozen?: boolean },
): Promise<InvestorEligibilityTable[]> {
  let query = store.selectFrom("investor_eligibility").selectAll().orderBy("address").limit(params.limit);
  if (params.afterAddress !== undefined) query = query.where("address", ">", params.afterAddress);
  if (params.kycStatus !== undefined) query = query.where("kyc_status", "=", params.kycStatus);
  if (params.frozen === true) query = query.where("frozen_at", "is not", null);
  if (params.frozen === false) query = query.where("frozen_at", "is", null);
  return query.execute();
}

/** The admin's list of eligibility records, by address, one page at a time (the paging helper's cursor `{ a }`). */
export function pageOfEligibility(
  store: Store,
  params: { cursor?: string; limit: number; kycStatus?: KycStatus; frozen?: boolean },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: z.object({ a: z.string() }),
    fetch: (after, take) =>
      listEligibility(store, { afterAddress: after?.a, limit: take, kycStatus: params.kycStatus, frozen: params.frozen }),
    keyOf: (row) => ({ a: row.address }),
    view: (rows) => rows.map((row) => eligibilityView(row.address, row)),
  });
}

/** Compares an investor's compliance record with an offering's rules, the way a transfer agent would. */
export function ineligibilityReasons(
  record: InvestorEligibilityTable | undefined,
  offering: Pick<OfferingTable, "require_kyc" | "require_accreditation" | "allowed_jurisdictions" | "blocked_jurisdictions">,
  now = Date.now(),
): IneligibilityReason[] {
  const reasons: IneligibilityReason[] = [];
  if (record?.frozen_at != null) reasons.push("wallet_frozen");
  if (offering.require_kyc === 1 && record?.kyc_status !== "approved") reasons.push("kyc_required");
  const allowed = jurisdictionList(offering.allowed_jurisdictions);
  const blocked = jurisdictionList(offering.blocked_jurisdictions);
  const jurisdiction = record?.jurisdiction ?? null;
  if (allowed.length > 0 || blocked.length > 0) {
    if (jurisdiction === null) reasons.push("jurisdiction_unknown");
    else if (allowed.length > 0 && !allowed.includes(jurisdiction)) reasons.push("jurisdiction_not_allowed");
    else if (blocked.includes(jurisdiction)) reasons.push("jurisdiction_blocked");
  }
  if (offering.require_accreditation === 1) {
    if (record?.accredited !== 1) reasons.push("accreditation_required");
    else if (record.accreditation_expires_at != null && Number(record.accreditation_expires_at) <= now) {
      reasons.push("accreditation_expired");
    }
  }
  return reasons;
}

export function jurisdictionList(json: string | null): string[] {
  return json === null ? [] : (JSON.parse(json) as string[]);
}
