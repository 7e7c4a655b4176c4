import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, isAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { REFUND_STATUSES } from "../refunds/refund-rules.js";
import { publicRefundView, refundOfToken, setRefundDestination } from "../refunds/refunds.js";
import type { AppEnv } from "./app-env.js";

const refundToken = z.string().min(1).max(200);
const RefundParam = z.object({ id: z.string().max(100) });
const json = <schema extends z.ZodType>(schema: schema) => ({ required: true, content: { "application/json": { schema } } });

export const PublicRefundSchema = z
  .object({
    id: z.string(),
    status: z.enum(REFUND_STATUSES),
    amount: z.string(),
    decimals: z.literal(6),
    token: z.literal("USDC"),
    network: z.string().nullable(),
    chainId: z.number().int(),
    externalOrderId: z.string().nullable(),
    destination: z.string().nullable(),
    transactionHash: z.string().nullable(),
    shop: z.object({
      displayName: z.string(),
      logoUrl: z.string().nullable(),
      accentColor: z.string().nullable(),
      supportUrl: z.string().nullable(),
      supportEmail: z.string().nullable(),
    }),
    createdAt: z.string(),
    succeededAt: z.string().nullable(),
  })
  .openapi("PublicRefund");

const validateRoute = declareRoute({
  method: "post",
  path: "/{id}/validate",
  security: CALLERS.anyone,
  summary: "The refund as its customer may see it (refund page)",
  request: { params: RefundParam, body: json(z.object({ refundToken }).strict()) },
  responses: {
    200: { description: "The refund", content: { "application/json": { schema: PublicRefundSchema } } },
    ...errorResponses("invalid_refund_token"),
  },
});

const destinationRoute = declareRoute({
  method: "post",
  path: "/{id}/destination",
  security: CALLERS.anyone,
  summary: "The customer names the address that receives the refund (once; refund page)",
  request: {
    params: RefundParam,
    body: json(
      z
        .object({
          refundToken,
          destination: z
            .string()
            .refine((value): value is Address => isAddress(value, { strict: false }), "a 20-byte address in hex"),
        })
        .strict(),
    ),
  },
  responses: {
    200: { description: "Set: the refund is ready to be sent", content: { "application/json": { schema: PublicRefundSchema } } },
    ...errorResponses(
      "invalid_refund_token",
      "refund_destination_locked",
      "destination_is_zero_address",
      "destination_is_token",
      "destination_is_payment_address",
      "destination_is_service_address",
    ),
  },
});

/** The customer's refund page calls these with the token from its link (`#rt=`), never in a URL. */
export function publicRefundRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>()
    .openapi(validateRoute, async (c) => {
      const refund = await refundOfToken(context.store, { refundId: c.req.valid("param").id, ...c.req.valid("json") });
      return c.json(await publicRefundView(context, refund), 200);
    })
    .openapi(destinationRoute, async (c) => {
      const { refundToken: token, destination } = c.req.valid("json");
      const refund = await setRefundDestination(context, { refundId: c.req.valid("param").id, refundToken: token, destination });
      return c.json(await publicRefundView(context, refund), 200);
    });
}
