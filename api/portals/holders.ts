import { getAddress } from "viem";
import type { Store } from "../store/open-store.js";

export type Holder = {
  investor: string;
  units: number;
  totalPaidUsdc: string;
  purchases: number;
  kycStatus: string;
  jurisdiction: string | null;
  frozen: boolean;
};

/**
 * The holder register of an offering: settled purchases summed per investor, with
 * the compliance facts an issuer needs (KYC status, jurisdiction, freeze).
 * Money is summed as bigint here, not in SQL, so no dialect rounds it.
 */
export async function listHolders(store: Store, offeringId: string): Promise<Holder[]> {
  const rows = await store
    .selectFrom("rwa_purchase")
    .innerJoin("checkout_session", "checkout_session.id", "rwa_purchase.session_id")
    .leftJoin("investor_eligibility", "investor_eligibility.address", "rwa_purchase.investor")
    .select([
      "rwa_purchase.investor",
      "rwa_purchase.units",
      "rwa_purchase.total_price_usdc",
      "investor_eligibility.kyc_status",
      "investor_eligibility.jurisdiction",
      "investor_eligibility.frozen_at",
    ])
    .where("rwa_purchase.offering_id", "=", offeringId)
    .where("checkout_session.status", "=", "settled")
    .orderBy("rwa_purchase.investor")
    .execute();
  const holders = new Map<string, Holder & { paid: bigint }>();
  for (const row of rows) {
    const holder = holders.get(row.investor) ?? {
      investor: getAddress(row.investor),
      units: 0,
      totalPaidUsdc: "0",
      purchases: 0,
      kycStatus: row.kyc_status ?? "pending",
      jurisdiction: row.jurisdiction ?? null,
      frozen: row.frozen_at != null,
      paid: 0n,
    };
    holder.units += row.units;
    holder.purchases += 1;
    holder.paid += BigInt(row.total_price_usdc);
    holder.totalPaidUsdc = holder.paid.toString();
    holders.set(row.investor, holder);
  }
  return [...holders.values()].map(({ paid: _paid, ...holder }) => holder);
}
