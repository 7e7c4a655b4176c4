import { z } from "zod";
import { keysetPage } from "../http/cursor.js";
import { problems } from "../http/problem.js";
import { type ListedPayment, paymentsPage } from "../payments/payment-record.js";
import type { PaymentStatus } from "../store/database.js";
import type { Store } from "../store/open-store.js";

export const PAYMENT_STATUSES = [
  "pending",
  "settled",
  "unresolved",
  "refund_requested",
  "attached",
  "reorged",
] as const satisfies readonly PaymentStatus[];

const cursorSchema = z.object({ t: z.number().int(), h: z.string(), l: z.number().int() });

/** Payments the engine recorded, oldest first; a partner sees its own, an administrator everyone's. */
export async function listPayments(
  store: Store,
  params: { partnerId?: string; status?: PaymentStatus; cursor?: string; limit: number },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: cursorSchema,
    fetch: (after, take) =>
      paymentsPage(store, {
        partnerId: params.partnerId,
        status: params.status,
        after: after === undefined ? undefined : { createdAt: after.t, transactionHash: after.h, logIndex: after.l },
        take,
      }),
    keyOf: (payment) => ({ t: payment.createdAt, h: payment.transactionHash, l: payment.logIndex }),
    view: (page) => page.map(paymentView),
  });
}

function paymentView(payment: ListedPayment) {
  return {
    chainId: payment.chainId,
    transactionHash: payment.transactionHash,
    logIndex: payment.logIndex,
    partnerId: payment.partnerId,
    status: payment.status,
    reason: payment.reason,
    sessionId: payment.sessionId,
    orderId: payment.orderId,
    /** The amount the session asked for, when the payment is linked to one. */
    expectedAmount: payment.expectedAmount?.toString() ?? null,
    from: payment.from,
    to: payment.to,
    amount: payment.amount.toString(),
    blockNumber: payment.blockNumber.toString(),
    minedAt: new Date(payment.minedAt).toISOString(),
    resolution: payment.resolution,
  };
}

/** One payment of the partner by its transfer (a payment to another partner's address is as missing). */
export async function readPayment(
  store: Store,
  params: { partnerId: string; chainId: number; transactionHash: string; logIndex: number },
) {
  const [payment] = await paymentsPage(store, {
    partnerId: params.partnerId,
    only: { chainId: params.chainId, transactionHash: params.transactionHash, logIndex: params.logIndex },
    take: 1,
  });
  if (payment === undefined || payment.partnerId !== params.partnerId) throw problems.notFound("Payment");
  return paymentView(payment);
}
