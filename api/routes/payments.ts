import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import type { PartnerVariables } from "../http/partner-auth.js";
import { listPayments, PAYMENT_STATUSES } from "../settlement/list-payments.js";
import type { AppEnv } from "./app-env.js";

const listRoute = createRoute({
  method: "get",
  path: "/",
  summary: "Payments the engine recorded, e.g. `status=unresolved` for transfers that matched no session",
  security: [{ apiKey: [] }],
  request: {
    query: z.object({
      status: z.enum(PAYMENT_STATUSES).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: { 200: { description: "A page of payments", content: { "application/json": { schema: z.any() } } } },
});

export function paymentRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>().openapi(listRoute, async (c) =>
    c.json(await listPayments(context.store, { ...c.req.valid("query"), partnerId: c.get("partner").id }), 200),
  );
}
