import { createRoute, OpenAPIHono, type RouteHandler, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import type { PartnerVariables } from "../http/partner-auth.js";
import { fulfilOrder } from "../orders/fulfil-order.js";
import { readOrder } from "../orders/read-order.js";
import type { AppEnv } from "./app-env.js";

const OrderParam = z.object({ orderId: z.string().max(100) });

const readRoute = createRoute({
  method: "get",
  path: "/{orderId}",
  summary: "Read an order: status, amounts, transfer, contact and delivery details, certificate",
  security: [{ apiKey: [] }],
  request: { params: OrderParam },
  responses: { 200: { description: "The order", content: { "application/json": { schema: z.any() } } } },
});

const fulfilRoute = createRoute({
  method: "post",
  path: "/{orderId}/fulfilment",
  summary: "Mark a settled order fulfilled",
  security: [{ apiKey: [] }],
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
  responses: { 200: { description: "The fulfilled order", content: { "application/json": { schema: z.any() } } } },
});

/**
 * The American spelling, as earlier releases wrote the path: an
 * alias kept out of the document so that one spelling is documented
 * (docs/http-conventions.md, "Spelling: fulfilment").
 */
const fulfilAliasRoute = { ...fulfilRoute, path: "/{orderId}/fulfillment", hide: true };

export function orderRoutes(context: AppContext) {
  const fulfil: RouteHandler<typeof fulfilRoute, AppEnv & { Variables: PartnerVariables }> = async (c) => {
    const partnerId = c.get("partner").id;
    const { orderId } = c.req.valid("param");
    await fulfilOrder(context, { partnerId, orderId, ...c.req.valid("json") });
    return c.json(await readOrder(context, { partnerId, orderId }), 200);
  };
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(readRoute, async (c) =>
      c.json(await readOrder(context, { partnerId: c.get("partner").id, orderId: c.req.valid("param").orderId }), 200),
    )
    .openapi(fulfilRoute, fulfil)
    .openapi(fulfilAliasRoute, fulfil);
}
