import type { AppContext } from "../app-context.js";
import { ProblemError, problem } from "../http/problem.js";
import { recordEvent } from "../outbox/record-event.js";
import { fulfilOrderRecord } from "./order-record.js";
import { findPartnerOrder } from "./read-order.js";

/**
 * Marks a settled order fulfilled with the partner's own reference (a shipment,
 * say). Idempotent: the same key and reference answer the same; a fulfilled
 * order cannot be fulfilled again under another key.
 */
export async function fulfilOrder(
  context: AppContext,
  params: { partnerId: string; orderId: string; fulfilmentReference: string; idempotencyKey: string },
): Promise<void> {
  const now = Date.now();
  await context.store.transaction().execute(async (trx) => {
    const order = await findPartnerOrder(trx, params);
    if (order.status === "fulfilled") {
      if (order.fulfilmentIdempotencyKey === params.idempotencyKey && order.fulfilmentReference === params.fulfilmentReference)
        return;
      throw new ProblemError({
        status: 409,
        code: order.fulfilmentIdempotencyKey === params.idempotencyKey ? "idempotency_conflict" : "order_already_fulfilled",
        title: "The order is already fulfilled",
        detail: `Fulfilled with reference ${order.fulfilmentReference}.`,
      });
    }
    if (order.status !== "paid") {
      throw problem("order_not_settled", "Wait for the purchase.settled event of this order.");
    }
    const fulfilled = await fulfilOrderRecord(trx, {
      order,
      reference: params.fulfilmentReference,
      idempotencyKey: params.idempotencyKey,
      now,
    });
    if (!fulfilled) throw new Error(`order ${order.id} changed while it was fulfilled`);
    await recordEvent(trx, {
      partnerId: order.partnerId,
      type: "order.fulfilled",
      orderingKey: order.id,
      now,
      data: {
        externalOrderId: order.externalOrderId,
        orderId: order.id,
        purchaseId: order.purchaseId,
        fulfilmentReference: params.fulfilmentReference,
      },
    });
  });
}
