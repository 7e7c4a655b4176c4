import { z } from "zod";
import { keysetPage } from "../http/cursor.js";
import { ordersByIds } from "../orders/order-record.js";
import { creditingPaymentsOfSessions } from "../payments/payment-record.js";
import type { SessionStatus } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import { partnerSessionsPage } from "./session-record.js";
import { sessionView } from "./session-view.js";

export const SESSION_STATUSES = [
  "awaiting_payment",
  "payment_pending",
  "settled",
  "expired",
] as const satisfies readonly SessionStatus[];

const cursorSchema = z.object({ t: z.number().int(), i: z.string() });

/**
 * A partner's checkout sessions, newest first, each with its order's status (what
 * the console's "Sessions and orders" screen lists). RWA purchases of an issuer's
 * partner are included: they are sessions of that partner too.
 */
export async function listCheckoutSessions(
  store: Store,
  params: { partnerId: string; status?: SessionStatus; cursor?: string; limit: number },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: cursorSchema,
    fetch: (before, take) =>
      partnerSessionsPage(store, {
        partnerId: params.partnerId,
        status: params.status,
        before: before === undefined ? undefined : { createdAt: before.t, id: before.i },
        take,
      }),
    keyOf: (session) => ({ t: session.createdAt, i: session.id }),
    view: async (page) => {
      const orders = await ordersByIds(
        store,
        page.map((session) => session.orderId),
      );
      const credited = new Map(
        (
          await creditingPaymentsOfSessions(
            store,
            page.filter((session) => session.status === "settled").map((session) => session.id),
          )
        ).map((payment) => [payment.sessionId, payment.amount]),
      );
      return page.map((session) => {
        // Every session has its order (a foreign key): the row is read in the same request.
        const order = orders.get(session.orderId);
        if (order === undefined) throw new Error(`order ${session.orderId} of session ${session.id} not found`);
        return {
          ...sessionView(session, { orderId: order.id, purchaseId: order.purchaseId }),
          kind: session.kind,
          order: {
            id: order.id,
            status: order.status,
            fulfilledAt: order.fulfilledAt === null ? null : new Date(order.fulfilledAt).toISOString(),
            amountPaid: credited.get(session.id)?.toString() ?? null,
            // Settled by an attached transfer below the total (as on GET /v1/orders/:id and in purchase.settled).
            underpaid: (credited.get(session.id) ?? session.totalPriceUsdc) < session.totalPriceUsdc,
          },
        };
      });
    },
  });
}
