import type { Hex } from "viem";
import type { AppContext } from "../app-context.js";
import type { PortalSettings } from "../config/option-types.js";
import { ownPurchase, sessionOf } from "../purchases/purchases.js";
import { reconcileOfferings } from "../purchases/reservations.js";
import { submitTransactionHash } from "./submit-transaction-hash.js";

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
    await reconcileOfferings(context, { offeringIds: [purchase.offeringId], releaseGraceMs: settings.releaseGraceMs });
  }
  return { purchaseId: purchase.id, ...result };
}
