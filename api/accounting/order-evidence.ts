import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { keysetPage, type Page } from "../http/cursor.js";
import { problems } from "../http/problem.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import { findOrder, type Order, ordersCreatedBetween } from "../orders/order-record.js";
import { eventDeliveries } from "../outbox/deliveries.js";
import { eventsOfOrder } from "../outbox/record-event.js";
import { type Payment, paymentsOfOrder, SUBSCRIPTION_CHARGE_RESOLUTION } from "../payments/payment-record.js";
import { orderRefunds } from "../refunds/refund-record.js";
import { viewRefund } from "../refunds/refunds.js";
import { rewardsOfOrders } from "../rewards/reward-record.js";
import { rewardView } from "../rewards/reward-view.js";
import type { OrderStatus } from "../store/database.js";
import { checksum } from "../values/checksum-address.js";
import { readOrder } from "../views/order-view.js";
import type { BooksScope } from "./ledger.js";
import type { ResolvedRange } from "./range.js";

/** The order in view: a partner's own (another partner's is as missing as one that does not exist), or any for an auditor. */
async function orderInScope(context: Pick<AppContext, "store">, scope: BooksScope, orderId: string): Promise<Order> {
  const order = await findOrder(context.store, orderId);
  if (order === undefined || (scope.partnerId !== undefined && order.partnerId !== scope.partnerId))
    throw problems.notFound(`Order ${orderId}`);
  return order;
}

/** The matching rule that applied to a payment (SPEC 3 and 11), in words an auditor can check against the transfer. */
function matchingRule(payment: Payment): { rule: string; description: string } {
  if (payment.status === "attached")
    return {
      rule: "attached_by_hand",
      description: `Credited by hand after it matched no session exactly (${payment.resolution ?? "attached"}).`,
    };
  if (payment.status === "settled" && payment.resolution === SUBSCRIPTION_CHARGE_RESOLUTION)
    return {
      rule: "subscription_charge",
      description:
        "The subscription manager's charge of one period: its Charged log and the USDC transfer of exactly the subscription's amount from the subscriber to the payee, in one transaction, indexed with the network's confirmations.",
    };
  if (payment.status === "settled" || payment.status === "pending")
    return {
      rule: "exact_amount_reference",
      description:
        "Canonical USDC on the session's network, to the session's payment address, of exactly the displayed amount (total + reference offset), mined within the session's window, the transfer never used before.",
    };
  return { rule: payment.reason ?? "unmatched", description: `Not credited: ${payment.reason ?? "unmatched"}.` };
}

/** `GET /v1/orders/:id/evidence`: what ties an order to the chain, for checking with any RPC node (docs/accounting.md). */
export async function orderEvidence(context: AppContext, params: { scope: BooksScope; orderId: string }) {
  const order = await orderInScope(context, params.scope, params.orderId);
  const payments = await paymentsOfOrder(context.store, order.id);
  const heads = await context.indexed.heads();
  const transfers = await Promise.all(
    payments.map(async (payment) => {
      const indexed = (await context.indexed.transfersByHash(payment.transactionHash)).find(
        (transfer) => transfer.logIndex === payment.logIndex && transfer.chainId === payment.chainId,
      );
      const head = heads.get(payment.chainId)?.blockNumber;
      const network = networkByChainId(context, payment.chainId);
      return {
        chainId: payment.chainId,
        network: network?.name ?? null,
        tokenAddress: indexed === undefined ? (network?.usdc ?? null) : checksum(indexed.token),
        transactionHash: payment.transactionHash,
        logIndex: payment.logIndex,
        blockNumber: payment.blockNumber.toString(),
        blockHash: payment.blockHash,
        inIndex: indexed !== undefined,
        from: payment.from,
        to: payment.to,
        value: payment.amount.toString(),
        minedAt: new Date(payment.minedAt).toISOString(),
        confirmations: head === undefined ? null : confirmationsOf(payment, head),
        requiredConfirmations: network?.confirmations ?? null,
        paymentStatus: payment.status,
        ...matchingRule(payment),
      };
    }),
  );
  const events = await eventsOfOrder(context.store, { partnerId: order.partnerId, orderId: order.id });
  const eventsWithDeliveries = await Promise.all(
    events.map(async (event) => ({
      id: event.id,
      type: event.type,
      createdAt: new Date(event.createdAt).toISOString(),
      deliveries: (await eventDeliveries(context.store, { partnerId: order.partnerId, eventId: event.id })).map((delivery) => ({
        id: delivery.id,
        endpointId: delivery.endpointId,
        url: delivery.url,
        status: delivery.status,
        attemptCount: delivery.attemptCount,
        lastStatusCode: delivery.lastStatusCode,
        deliveredAt: delivery.deliveredAt,
      })),
    })),
  );
  return {
    orderId: order.id,
    partnerId: order.partnerId,
    externalOrderId: order.externalOrderId,
    status: order.status,
    transfers,
    // Each refund's and reward's own view carries its transfer (transaction hash, block) once it has one.
    refunds: await Promise.all(
      ((await orderRefunds(context.store, [order.id])).get(order.id) ?? []).map((refund) => viewRefund(context.store, refund)),
    ),
    rewards: (await rewardsOfOrders(context.store, [order.id])).map(rewardView),
    events: eventsWithDeliveries,
  };
}

const OrderCursor = z.object({ t: z.number().int(), id: z.string().max(100) });

/** `GET /v1/orders?status=` (a range on the orders' creation time), the same order shape as `GET /v1/orders/:id`. */
export function ordersInRange(
  context: AppContext,
  params: {
    scope: BooksScope;
    range: Pick<ResolvedRange, "fromTime" | "toTime">;
    status?: OrderStatus;
    cursor?: string;
    limit: number;
  },
): Promise<Page<Awaited<ReturnType<typeof readOrder>>>> {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: OrderCursor,
    keyOf: (order: Order) => ({ t: order.createdAt, id: order.id }),
    fetch: (after, take) =>
      ordersCreatedBetween(context.store, {
        partnerId: params.scope.partnerId,
        status: params.status,
        fromTime: params.range.fromTime,
        toTime: params.range.toTime,
        after: after === undefined ? undefined : { createdAt: after.t, id: after.id },
        take,
      }),
    view: (orders) => Promise.all(orders.map((order) => readOrder(context, { partnerId: order.partnerId, orderId: order.id }))),
  });
}
