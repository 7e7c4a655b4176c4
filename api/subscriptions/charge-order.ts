import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { insertSession, moveSession } from "../checkout/session-record.js";
import type { NetworkConfig } from "../config/networks.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { creditOrder, findOrCreateOrder, getOrder, type Order } from "../orders/order-record.js";
import { findPayment, insertPayment, SUBSCRIPTION_CHARGE_RESOLUTION } from "../payments/payment-record.js";
import { grantCashbackAtSettlement } from "../rewards/grant-reward.js";
import { newPayment } from "../settlement/record-transfer.js";
import type { Database } from "../store/database.js";
import type { SubscriptionCharge } from "./charge-record.js";
import type { Subscription } from "./subscription-record.js";

/**
 * A paid charge becomes an ordinary order (SPEC 18): the order, a session that stands for the
 * charge (settled by its transfer, never open to any other payment: it reserves no amount
 * reference), and the transfer's payment row, credited in the caller's transaction. Refunds,
 * rewards, the order's evidence and the books then find the order's payment as they find a
 * checkout's; the payment's resolution (`subscription_charge`) makes its ledger kind. No
 * `purchase.settled` is written: the partner hears `subscription.charged`, which names the order.
 */
export async function creditChargeOrder(
  trx: Kysely<Database>,
  params: {
    subscription: Subscription;
    charge: SubscriptionCharge;
    transfer: IndexedTransfer;
    network: NetworkConfig;
    now: number;
  },
): Promise<Order> {
  const { subscription, charge, transfer, network, now } = params;
  const externalOrderId = `${subscription.id}:${charge.periodIndex}`;
  const created = await findOrCreateOrder(trx, { partnerId: subscription.partnerId, externalOrderId, now });
  // A charge paid once is credited once: a second pass over the same charge finds the order credited.
  if (created.settledSessionId !== null) return created;
  const session = await insertSession(trx, {
    id: `cs_${randomUUID().replaceAll("-", "")}`,
    partnerId: subscription.partnerId,
    orderId: created.id,
    kind: "commerce",
    status: "awaiting_payment",
    network: network.name,
    chainId: network.chainId,
    tokenAddress: subscription.token,
    paymentAddress: subscription.payee,
    totalPriceUsdc: charge.amount,
    amountOffset: 0,
    amountDue: charge.amount,
    requiredPayer: subscription.subscriber,
    externalOrderId,
    externalProductId: subscription.id,
    productName: subscription.productName,
    productCategory: "subscription",
    quantity: 1,
    shippingRequired: false,
    certificateEnabled: false,
    contact: null,
    delivery: null,
    metadata: stringMetadata(subscription.metadata),
    expiresAt: now,
    lateUntil: now,
    createdAt: now,
    updatedAt: now,
  });
  if (!(await moveSession(trx, { session, transition: "settle", now })))
    throw new Error(`charge ${charge.id}: its session ${session.id} moved while it was settled`);
  const payment = newPayment(transfer, {
    partnerId: subscription.partnerId,
    sessionId: session.id,
    status: "settled",
    reason: null,
    now,
  });
  if (!(await insertPayment(trx, { ...payment, resolution: SUBSCRIPTION_CHARGE_RESOLUTION }))) {
    // The transfer is one payment only: recorded already (never by the matcher, which skips charges), it stands.
    const recorded = await findPayment(trx, transfer);
    throw new Error(`charge ${charge.id}: its transfer is recorded already as a ${recorded?.status} payment`);
  }
  if (!(await creditOrder(trx, { orderId: created.id, sessionId: session.id, now })))
    throw new Error(`charge ${charge.id}: its order ${created.id} was credited meanwhile`);
  const order = await getOrder(trx, created.id);
  // The partner's automatic cashback (docs/rewards.md) applies to a charge as to any settled order.
  await grantCashbackAtSettlement(trx, { order, amountPaid: transfer.value, network, token: subscription.token, now });
  return order;
}

/** A session's metadata is strings (as checkout takes it); the subscription's is any JSON, kept readable. */
function stringMetadata(metadata: Record<string, unknown> | null): Record<string, string> | null {
  if (metadata === null) return null;
  return Object.fromEntries(
    Object.entries(metadata).map(([key, value]) => [key, typeof value === "string" ? value : JSON.stringify(value)]),
  );
}
