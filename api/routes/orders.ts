import { OpenAPIHono, type RouteHandler, z } from "@hono/zod-openapi";
import { wantsCsv } from "../accounting/csv-export.js";
import { orderEvidence, ordersCsv, ordersReport } from "../accounting/reports.js";
import type { AppContext } from "../app-context.js";
import { RelayViewSchema } from "../gasless/authorization-schema.js";
import { CALLERS, declaredFor, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problems } from "../http/problem.js";
import { fulfilOrder } from "../orders/fulfil-order.js";
import { findOrder } from "../orders/order-record.js";
import { type PartnerVariables, readScope } from "../partners/partner-auth.js";
import { readOrder } from "../views/order-view.js";
import { type BooksAudience, RangeQuerySchema } from "./accounting.js";
import type { AppEnv } from "./app-env.js";
import { PaymentSchema } from "./checkout-sessions.js";
import { ContactSchema, DeliverySchema } from "./public-checkout.js";

const OrderParam = z.object({ orderId: z.string().max(100) });

const nullableString = z.string().nullable();
export const OrderSchema = z
  .object({
    id: z.string(),
    externalOrderId: z.string(),
    purchaseId: z.string(),
    status: z.string().openapi({ description: "awaiting_payment, payment_pending, settled, expired or fulfilled" }),
    network: nullableString,
    chainId: z.number().int().nullable(),
    totalPriceUsdc: nullableString.openapi({ example: "25000000" }),
    amountPaid: nullableString,
    amountRefunded: z.string().openapi({ description: "succeeded refunds, base units (docs/refunds.md)" }),
    amountRefundPending: z.string().openapi({ description: "ready and pending refunds, base units" }),
    refundStatus: z.enum(["none", "partial", "full"]),
    underpaid: z.boolean().openapi({
      description: "Settled by an attached transfer below the total, which the partner accepted (as in `purchase.settled`)",
    }),
    session: z.object({ id: z.string(), status: z.string(), expiresAt: z.string(), payment: PaymentSchema }).nullable(),
    payment: z
      .object({
        transactionHash: z.string(),
        logIndex: z.number().int(),
        blockNumber: z.string(),
        from: z.string(),
        to: z.string(),
        amount: z.string(),
        confirmations: z.number().int().nullable(),
        requiredConfirmations: z.number().int().nullable(),
        minedAt: z.string(),
        relay: RelayViewSchema.nullable().openapi({ description: "A gasless payment: the relayed authorization and its gas" }),
      })
      .nullable(),
    contact: ContactSchema.nullable(),
    delivery: DeliverySchema.nullable(),
    metadata: z.record(z.string(), z.string()),
    certificate: z.object({
      enabled: z.boolean(),
      status: z.string(),
      contract: nullableString,
      tokenId: nullableString,
      owner: nullableString,
      mintTransactionHash: nullableString,
    }),
    rewardIds: z
      .array(z.string())
      .openapi({ description: "The ids of the order's rewards (`GET /v1/rewards/{id}`), oldest first" }),
    fulfilment: z
      .object({ reference: z.string().nullable(), fulfilledAt: z.string() })
      .nullable()
      .openapi({ description: "Set once the partner fulfilled the order (`POST /v1/orders/{orderId}/fulfilment`)" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Order");

const readRoute = declareRoute({
  method: "get",
  path: "/{orderId}",
  summary: "Read an order: status, amounts, transfer, contact and delivery details, certificate",
  security: CALLERS.booksRead,
  request: { params: OrderParam },
  responses: {
    200: { description: "The order", content: { "application/json": { schema: OrderSchema } } },
    ...errorResponses("not_found"),
  },
});

const fulfilRoute = declareRoute({
  method: "post",
  path: "/{orderId}/fulfilment",
  summary: "Mark a settled order fulfilled",
  security: CALLERS.partnerChange,
  request: {
    params: OrderParam,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({ fulfilmentReference: z.string().min(1).max(200), idempotencyKey: z.string().min(1).max(255) })
            .strict(),
        },
      },
    },
  },
  responses: {
    200: { description: "The fulfilled order", content: { "application/json": { schema: OrderSchema } } },
    ...errorResponses("not_found", "order_not_settled", "order_already_fulfilled", "idempotency_conflict"),
  },
});

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "Orders created in a range (accounting), the same shape as GET /v1/orders/{orderId}",
  description: "`Accept: text/csv` streams the whole range as CSV (columns in docs/accounting.md).",
  security: CALLERS.booksRead,
  request: {
    query: RangeQuerySchema.extend({
      status: z.enum(["awaiting_payment", "paid", "fulfilled"]).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
    }),
  },
  responses: {
    200: {
      description: "A page of orders",
      content: {
        "application/json": { schema: z.object({ data: z.array(OrderSchema), nextCursor: z.string().nullable() }) },
        "text/csv": { schema: z.string() },
      },
    },
    ...errorResponses("invalid_range", "range_too_wide", "range_not_indexed"),
  },
});

const evidenceRoute = declareRoute({
  method: "get",
  path: "/{orderId}/evidence",
  summary:
    "An order's evidence: transfers with block hash and confirmations now, the matching rule, refunds, rewards, events and deliveries",
  security: CALLERS.booksRead,
  request: { params: OrderParam },
  responses: {
    200: { description: "The evidence", content: { "application/json": { schema: z.record(z.string(), z.unknown()) } } },
    ...errorResponses("not_found"),
  },
});

export function orderRoutes(context: AppContext) {
  const fulfil: RouteHandler<typeof fulfilRoute, AppEnv & { Variables: PartnerVariables }> = async (c) => {
    const partnerId = c.get("partner").id;
    const { orderId } = c.req.valid("param");
    await fulfilOrder(context, { partnerId, orderId, ...c.req.valid("json") });
    return c.json(await readOrder(context, { partnerId, orderId }), 200);
  };
  return orderReadRoutes(context).openapi(fulfilRoute, fulfil);
}

/**
 * The order reads alone (list, evidence, one order), without fulfil: mounted as they are
 * where only reading is allowed (the operator's books across partners, docs/accounting.md).
 */
export function orderReadRoutes(context: AppContext, audience: BooksAudience = "partner") {
  const declared = <route extends { security?: unknown; middleware?: unknown }>(route: route) =>
    audience === "partner" ? route : declaredFor(route, CALLERS.operatorBooks);
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(declared(listRoute), async (c) => {
      const { status, cursor, limit, ...query } = c.req.valid("query");
      const scope = readScope(c);
      if (wantsCsv(c.req.header("Accept")))
        return c.body(await ordersCsv(context, { scope, query, status }), 200, {
          "Content-Type": "text/csv; charset=utf-8",
          "Content-Disposition": 'attachment; filename="orders.csv"',
          "Cache-Control": "no-store",
        });
      return c.json(await ordersReport(context, { scope, query, status, cursor, limit }), 200);
    })
    .openapi(declared(evidenceRoute), async (c) =>
      c.json(await orderEvidence(context, { scope: readScope(c), orderId: c.req.valid("param").orderId }), 200),
    )
    .openapi(declared(readRoute), async (c) => {
      const { orderId } = c.req.valid("param");
      // An auditor reading across partners reads the order of whichever partner it belongs to.
      const partnerId = readScope(c).partnerId ?? (await findOrder(context.store, orderId))?.partnerId;
      if (partnerId === undefined) throw problems.notFound(`Order ${orderId}`);
      return c.json(await readOrder(context, { partnerId, orderId }), 200);
    });
}
