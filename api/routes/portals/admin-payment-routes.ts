import { type createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppContext } from "../../app-context.js";
import { appendAudit, type PortalActor } from "../../audit/audit-log.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { listPayments, PAYMENT_STATUSES } from "../../settlement/list-payments.js";
import { attachPaymentToOrder } from "../../settlement/resolve-payment.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import { logKey } from "../../values/log-key.js";
import type { AppEnv } from "../app-env.js";
import { PaymentSchema } from "../payments.js";
import { jsonBody, jsonResponse, PageQuery, problemResponses, TransactionHashSchema } from "./schemas.js";

type AdminEnv = AppEnv & { Variables: PortalVariables };

const PaymentParam = z.object({
  chainId: z.coerce.number().int().positive(),
  transactionHash: TransactionHashSchema,
  // Coerced from the path, where zod would also take `null` (as 0): the document states the path parameter plainly.
  logIndex: z.coerce
    .number()
    .int()
    .nonnegative()
    .openapi({ param: { required: true }, type: "integer", minimum: 0 }),
});

/**
 * `/api/admin/payments`: every partner's payments, and attaching an unresolved one to its
 * order by hand. No refund: a refund is the partner's (SPEC 15: its reason, its destination,
 * its customer's link, sent from its own payment address, cancelled by it), so the operator
 * points the partner to its payment's page instead (docs/console.md).
 */
export function adminPaymentRoutes(context: AppContext) {
  const route = <config extends Parameters<typeof createRoute>[0]>(config: config) =>
    declareRoute({ ...config, tags: ["Admin portal"], security: CALLERS.admin });
  const actorOf = (c: Context<AdminEnv>): PortalActor => ({ role: "admin", address: c.get("portalSession").address });
  const audit =
    (actor: PortalActor, action: string, key: z.infer<typeof PaymentParam>, details: Record<string, unknown>) =>
    (trx: Parameters<typeof appendAudit>[0]) =>
      appendAudit(trx, {
        actor,
        action,
        target: { type: "payment", id: logKey(key) },
        details,
      });

  return new OpenAPIHono<AdminEnv>()
    .openapi(
      route({
        method: "get",
        path: "/",
        summary: "Payments of every partner, e.g. `status=unresolved`",
        request: {
          query: PageQuery.extend({ status: z.enum(PAYMENT_STATUSES).optional(), partnerId: z.string().max(100).optional() }),
        },
        responses: {
          200: jsonResponse("A page of payments", z.object({ data: z.array(PaymentSchema), nextCursor: z.string().nullable() })),
          ...problemResponses,
        },
      }),
      async (c) => c.json(await listPayments(context.store, c.req.valid("query")), 200),
    )
    .openapi(
      route({
        method: "post",
        path: "/{chainId}/{transactionHash}/{logIndex}/attach",
        summary: "Credit an unresolved payment to an order (settles it and sends purchase.settled)",
        request: {
          params: PaymentParam,
          body: jsonBody(z.object({ orderId: z.string().min(1).max(100), note: z.string().max(500).optional() })),
        },
        responses: { 200: jsonResponse("Attached", z.object({ status: z.literal("attached") })), ...problemResponses },
      }),
      async (c) => {
        const key = c.req.valid("param");
        const body = c.req.valid("json");
        await attachPaymentToOrder(context, {
          ...key,
          ...body,
          alsoInTransaction: audit(actorOf(c), "payment.attach", key, body),
        });
        return c.json({ status: "attached" as const }, 200);
      },
    );
}
