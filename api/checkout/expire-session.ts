import type { Kysely } from "kysely";
import { getOrder } from "../orders/order-record.js";
import { recordEvent } from "../outbox/record-event.js";
import type { Database } from "../store/database.js";
import { releaseUnusedReference } from "./amount-reference.js";
import { type CheckoutSession, moveSession } from "./session-record.js";

// A session's end and its event, beside the record rather than in it: the record
// module knows no events (the outbox reads session metadata from it, and an import
// back would make a cycle).

/** Closes an open session (at its expiry, or when a newer session replaces it) and tells the partner. */
export async function expireSession(
  trx: Kysely<Database>,
  params: { session: CheckoutSession; now: number; reason: "expired" | "superseded" | "order_settled" },
): Promise<boolean> {
  const { session, now } = params;
  if (session.status !== "awaiting_payment") return false;
  const moved = await moveSession(trx, { session, transition: "expire", now, endNow: params.reason !== "expired" });
  if (!moved) return false;
  await releaseUnusedReference(trx, {
    sessionId: session.id,
    endedAt: params.reason === "expired" ? Math.min(session.expiresAt, now) : now,
  });
  const order = await getOrder(trx, session.orderId);
  await recordEvent(trx, {
    partnerId: session.partnerId,
    type: "session.expired",
    orderingKey: session.orderId,
    now,
    data: {
      externalOrderId: session.externalOrderId,
      orderId: session.orderId,
      purchaseId: order.purchaseId,
      sessionId: session.id,
      reason: params.reason,
      totalPriceUsdc: session.totalPriceUsdc.toString(),
      amount: session.amountDue.toString(),
      expiresAt: new Date(Math.min(session.expiresAt, now)).toISOString(),
    },
  });
  return true;
}
