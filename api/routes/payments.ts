import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import { refundPageUrl, viewRefund } from "../refunds/refunds.js";
import { listPayments, PAYMENT_STATUSES, readPayment } from "../settlement/list-payments.js";
import { attachPaymentToOrder, markPaymentForRefund } from "../settlement/resolve-payment.js";
import type { AppEnv } from "./app-env.js";
import { RefundSchema } from "./refunds.js";

/** One payment the engine recorded (the partner's list and the admin's). */
export const PaymentSchema = z
  .object({
    chainId: z.number().int(),
    transactionHash: z.string(),
    logIndex: z.number().int(),
    partnerId: z.string().nullable(),
    status: z.enum(PAYMENT_STATUSES),
    reason: z.string().nullable().openapi({ description: "why an unresolved payment matched no session" }),
    sessionId: z.string().nullable(),
    orderId: z.string().nullable(),
    expectedAmount: z.string().nullable(),
    from: z.string(),
    to: z.string(),
    amount: z.string(),
    blockNumber: z.string(),
    minedAt: z.string(),
    resolution: z.string().nullable(),
  })
  .openapi("Payment");

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "Payments the engine recorded, e.g. `status=unresolved` for transfers that matched no session",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      status: z.enum(PAYMENT_STATUSES).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: {
    200: {
      description: "A page of payments",
      content: {
        "application/json": {
          schema: z.object({
            data: z.array(PaymentSchema),
            nextCursor: z.string().nullable(),
          }),
        },
      },
    },
  },
});

const PaymentParam = z.object({
  chainId: z.coerce.number().int().positive(),
  transactionHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "a 32-byte transaction hash in hex"),
  // Coerced from the path, where zod would also take `null` (as 0): the document states the path parameter plainly.
  logIndex: z.coerce
    .number()
    .int()
    .nonnegative()
    .openapi({ param: { required: true }, type: "integer", minimum: 0 }),
});

const readRoute = declareRoute({
  method: "get",
  path: "/{chainId}/{transactionHash}/{logIndex}",
  summary: "One of your payments, by its transfer (the console's payment page)",
  security: CALLERS.partnerRead,
  request: { params: PaymentParam },
  responses: {
    200: { description: "The payment", content: { "application/json": { schema: PaymentSchema } } },
    ...errorResponses("not_found"),
  },
});

const attachRoute = declareRoute({
  method: "post",
  path: "/{chainId}/{transactionHash}/{logIndex}/attach",
  summary:
    "Credit one of your unresolved payments to one of your orders (settles it, `purchase.settled` with `resolution: attached`; " +
    "below the total with `underpaid: true`)",
  security: CALLERS.partnerChange,
  request: {
    params: PaymentParam,
    body: {
      required: true,
      content: { "application/json": { schema: z.object({ orderId: z.string().min(1).max(100) }).strict() } },
    },
  },
  responses: {
    200: { description: "Attached", content: { "application/json": { schema: z.object({ status: z.literal("attached") }) } } },
    ...errorResponses("not_found", "payment_not_unresolved", "payment_of_another_partner", "order_already_settled"),
  },
});

const refundRoute = declareRoute({
  method: "post",
  path: "/{chainId}/{transactionHash}/{logIndex}/refund-requested",
  summary:
    "Send one of your unresolved payments back: creates a refund of all of it, waiting for the customer's address (prefer `POST /v1/refunds`)",
  security: CALLERS.partnerChange,
  request: {
    params: PaymentParam,
    body: {
      required: false,
      content: { "application/json": { schema: z.object({ note: z.string().max(500).optional() }).strict() } },
    },
  },
  responses: {
    200: {
      description: "Marked",
      content: {
        "application/json": {
          schema: z.object({
            status: z.literal("refund_requested"),
            refund: RefundSchema.openapi({
              description: "The refund it became (docs/refunds.md): send `customerUrl` to your customer",
            }),
          }),
        },
      },
    },
    ...errorResponses("not_found", "payment_not_unresolved"),
  },
});

/** A partner's payments, and the resolution of its own unresolved ones (only payments to its own addresses). */
export function paymentRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(listRoute, async (c) =>
      c.json(await listPayments(context.store, { ...c.req.valid("query"), partnerId: c.get("partner").id }), 200),
    )
    .openapi(readRoute, async (c) =>
      c.json(await readPayment(context.store, { ...c.req.valid("param"), partnerId: c.get("partner").id }), 200),
    )
    .openapi(attachRoute, async (c) => {
      const key = c.req.valid("param");
      const { orderId } = c.req.valid("json");
      await attachPaymentToOrder(context, { ...key, orderId, partnerId: c.get("partner").id });
      return c.json({ status: "attached" as const }, 200);
    })
    .openapi(refundRoute, async (c) => {
      const key = c.req.valid("param");
      const body = c.req.valid("json") ?? {};
      const created = await markPaymentForRefund(context, { ...key, note: body.note, partnerId: c.get("partner").id });
      const baseUrl = context.settings.publicBaseUrl ?? new URL(c.req.url).origin;
      const customerUrl = created.token === null ? null : refundPageUrl(baseUrl, created.refund.id, created.token);
      return c.json(
        { status: "refund_requested" as const, refund: await viewRefund(context.store, created.refund, customerUrl) },
        200,
      );
    });
}
