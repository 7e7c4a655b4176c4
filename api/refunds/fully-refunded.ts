import type { Kysely } from "kysely";
import { revokeUnclaimedRewardsOfOrder } from "../rewards/revoke-reward.js";
import type { Database } from "../store/database.js";
import { markFullyRefunded, type PaymentRef } from "./refund-record.js";

/**
 * Everything that happens when an order becomes fully refunded (its succeeded refunds
 * reach what its crediting payment paid), in the transaction of the refund that made
 * it so. Add here anything else a full refund takes away: it runs exactly once per order.
 *
 * - its certificate can no longer be claimed, and a minted one verifies `revoked`
 *   (the claim and the verification read `fullyRefundedOrderIds`, which this mark answers);
 * - its rewards that were not claimed are revoked (SPEC 16). One whose voucher is still
 *   out (or whose claim is confirming) owes the revocation: the customer may still send
 *   that voucher until its deadline, as for any revoke, but no new voucher is issued and
 *   the reward-claims worker revokes it once the voucher lapses unclaimed;
 * - `alsoOnFullRefund`, what the folders above refunds take away: an RWA purchase's units go
 *   back to its offering (the purchase's `refund` transition; api/purchases imports refunds, so
 *   the service's composition, api/service-workers.ts, hands `returnRefundedPurchaseUnits` to
 *   the refund worker). A partial refund keeps them: units are not split by money.
 */
export async function onOrderFullyRefunded(
  trx: Kysely<Database>,
  params: { orderId: string; payment: PaymentRef; now: number; alsoOnFullRefund: AlsoOnFullRefund },
): Promise<void> {
  if (!(await markFullyRefunded(trx, { payment: params.payment, now: params.now }))) return;
  await revokeUnclaimedRewardsOfOrder(trx, { orderId: params.orderId, reason: "order_refunded", now: params.now });
  await params.alsoOnFullRefund(trx, { orderId: params.orderId, now: params.now });
}

/** What else a full refund takes away, in its transaction (an RWA purchase's units: `returnRefundedPurchaseUnits`). */
export type AlsoOnFullRefund = (trx: Kysely<Database>, params: { orderId: string; now: number }) => Promise<unknown>;
