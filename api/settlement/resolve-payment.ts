import type { Kysely } from "kysely";
import type { Hex } from "viem";
import type { AppContext } from "../app-context.js";
import { moveSession, sessionForAttach, sessionTransitions } from "../checkout/session-record.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { problem, problems } from "../http/problem.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import { findOrder } from "../orders/order-record.js";
import { paymentAddressOwner } from "../partners/payment-addresses.js";
import { findPayment, movePayment, type Payment, type PaymentKey } from "../payments/payment-record.js";
import { reserveForAttachedPayment } from "../purchases/reservations.js";
import { refundUnresolvedPayment } from "../refunds/refunds.js";
import type { Database } from "../store/database.js";
import { allows } from "../store/transition-table.js";
import { settleOrder } from "./record-transfer.js";

/** Runs inside the resolution's transaction (the admin portal writes its audit entry there). */
type AlsoInTransaction = (trx: Kysely<Database>) => Promise<void>;

const notUnresolved = (status: string) => problem("payment_not_unresolved", `This payment is ${status}.`);

const alreadySettled = () => problem("order_already_settled", "Mark the payment for refund instead.");

/**
 * The partner whose payment address received the transfer: only it (or an
 * administrator on its behalf) may credit the money to one of its orders.
 */
async function paymentOwner(trx: Kysely<Database>, payment: Payment): Promise<string | null> {
  return (await paymentAddressOwner(trx, { chainId: payment.chainId, address: payment.to })) ?? payment.partnerId;
}

/**
 * Credits an unresolved payment (wrong amount, late, ...) to an order: the order
 * settles with that transfer (an underpaid one with `underpaid: true`) and the
 * partner hears `purchase.settled` with `resolution: "attached"`, in one
 * transaction. The order must belong to the partner whose address received the
 * money, whoever asks (docs/hosted-checkout.md: an administrator follows the same rule);
 * with `partnerId` (the partner API) another partner's payment or order is not found.
 */
export async function attachPaymentToOrder(
  context: AppContext,
  params: PaymentKey & { orderId: string; partnerId?: string; note?: string; alsoInTransaction?: AlsoInTransaction },
) {
  const heads = await context.indexed.heads();
  await context.store.transaction().execute(async (trx) => {
    await attachPayment(trx, { ...params, networks: context.networks, headOf: (chainId) => heads.get(chainId)?.blockNumber });
    await params.alsoInTransaction?.(trx);
  });
}

/** `attachPaymentToOrder` inside the caller's transaction, with the indexed heads read before it. */
export async function attachPayment(
  trx: Kysely<Database>,
  params: PaymentKey & {
    orderId: string;
    partnerId?: string;
    note?: string;
    networks: AppContext["networks"];
    headOf: (chainId: number) => bigint | undefined;
    now?: number;
  },
) {
  const now = params.now ?? Date.now();
  const payment = await findPayment(trx, params);
  if (payment === undefined) throw problems.notFound("Payment");
  const owner = await paymentOwner(trx, payment);
  if (params.partnerId !== undefined && owner !== params.partnerId) throw problems.notFound("Payment");
  if (payment.status !== "unresolved") throw notUnresolved(payment.status);
  const order = await findOrder(trx, params.orderId);
  if (order === undefined || (params.partnerId !== undefined && order.partnerId !== params.partnerId)) {
    throw problems.notFound(`Order ${params.orderId}`);
  }
  if (owner !== order.partnerId) {
    throw problem(
      "payment_of_another_partner",
      "A payment can only be credited to an order of the partner whose payment address received it.",
    );
  }
  if (order.settledSessionId !== null) throw alreadySettled();
  // The session the customer submitted it on, when it is this order's; else the order's latest there.
  const session = await sessionForAttach(trx, {
    orderId: order.id,
    chainId: payment.chainId,
    submittedOn: payment.sessionId,
  });
  if (session === undefined) throw problems.invalidRequest("The order has no checkout session on the payment's network.");
  if (!allows(sessionTransitions, "attach", session.status)) {
    // A transfer of this session is confirming: crediting another now would pay the order twice.
    throw problem(
      "payment_in_progress",
      "Wait for the purchase.settled event (or read the order); attach this payment only if that one fails.",
    );
  }
  const network = networkByChainId(params, payment.chainId);
  if (network === undefined) throw problems.invalidRequest("The payment's network is not enabled.");

  // An RWA purchase: the payer, the investor's eligibility now and the units, as a fresh purchase (issue 24).
  await reserveForAttachedPayment(trx, { session, payment, now });

  const resolution = `attached to ${order.id}${params.note ? `: ${params.note}` : ""}`;
  const attached = await movePayment(trx, {
    payment,
    transition: "attach",
    now,
    set: { sessionId: session.id, partnerId: session.partnerId, resolution },
  });
  if (!attached) throw notUnresolved("changing");
  if (!(await moveSession(trx, { session, transition: "attach", now }))) throw alreadySettled();
  const head = params.headOf(payment.chainId) ?? payment.blockNumber;
  const credited = await settleOrder(trx, {
    session: { ...session, status: "settled" },
    payment: { ...payment, status: "attached", sessionId: session.id },
    network,
    confirmations: confirmationsOf(payment, head),
    now,
    resolution: "attached",
  });
  // Another settlement credited the order since it was read: nothing of this attach stays.
  if (!credited) throw alreadySettled();
}

/**
 * Records that an unresolved payment is to be sent back (by its partner: the admin
 * console no longer refunds): it becomes a refund of all of it, waiting for the customer's
 * destination (docs/refunds.md); the service never moves money.
 */
export async function markPaymentForRefund(
  context: AppContext,
  params: PaymentKey & { partnerId?: string; note?: string; alsoInTransaction?: AlsoInTransaction },
) {
  return context.store.transaction().execute(async (trx) => {
    const created = await refundUnresolvedPayment(trx, context, {
      ...params,
      transactionHash: params.transactionHash as Hex,
    });
    await params.alsoInTransaction?.(trx);
    return created;
  });
}
