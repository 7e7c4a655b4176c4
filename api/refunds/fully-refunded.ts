import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";
import { markFullyRefunded, type PaymentRef } from "./refund-record.js";

/**
 * Everything that happens when an order becomes fully refunded (its succeeded refunds
 * reach what its crediting payment paid), in the transaction of the refund that made
 * it so. Add here anything else a full refund takes away: it runs exactly once per order.
 *
 * - its certificate can no longer be claimed, and a minted one verifies `revoked`
 *   (the claim and the verification read `fullyRefundedOrderIds`, which this mark answers).
 */
export async function onOrderFullyRefunded(
  trx: Kysely<Database>,
  params: { orderId: string; payment: PaymentRef; now: number },
): Promise<void> {
  if (!(await markFullyRefunded(trx, { payment: params.payment, now: params.now }))) return;
}
