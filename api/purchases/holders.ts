import type { Address } from "viem";
import { eligibilityOfWallets } from "../compliance/eligibility.js";
import type { Store } from "../store/open-store.js";
import { settledPurchasesOfOffering } from "./purchase-record.js";

export type Holder = {
  investor: Address;
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
  const purchases = await settledPurchasesOfOffering(store, offeringId);
  if (purchases.length === 0) return [];
  const compliance = await eligibilityOfWallets(
    store,
    purchases.map((purchase) => purchase.investor),
  );
  const holders = new Map<Address, Holder & { paid: bigint }>();
  for (const purchase of purchases) {
    const facts = compliance.get(purchase.investor);
    const holder = holders.get(purchase.investor) ?? {
      investor: purchase.investor,
      units: 0,
      totalPaidUsdc: "0",
      purchases: 0,
      kycStatus: facts?.kyc_status ?? "pending",
      jurisdiction: facts?.jurisdiction ?? null,
      frozen: facts?.frozen_at != null,
      paid: 0n,
    };
    holder.units += purchase.units;
    holder.purchases += 1;
    holder.paid += purchase.totalPriceUsdc;
    holder.totalPaidUsdc = holder.paid.toString();
    holders.set(purchase.investor, holder);
  }
  return [...holders.values()].map(({ paid: _paid, ...holder }) => holder);
}
