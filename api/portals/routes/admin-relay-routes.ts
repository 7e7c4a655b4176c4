import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { relayView } from "../../gasless/gasless-view.js";
import type { AppEnv } from "../../routes/app-env.js";
import { type PortalVariables, requirePortalSession } from "../portal-auth.js";
import { jsonResponse, problemResponses } from "./schemas.js";

/** `/api/admin/relayed-authorizations`: every gasless payment the relayers sent, with the gas each cost. */
export function adminRelayRoutes(context: AppContext) {
  const adminOnly = requirePortalSession(context, "admin");
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    createRoute({
      method: "get",
      path: "/",
      tags: ["Admin portal"],
      summary: "Relayed EIP-3009 authorizations, newest first, with status, transaction and gas spent (wei)",
      security: [{ portalSession: [] }],
      middleware: [adminOnly] as const,
      request: {
        query: z.object({
          status: z.enum(["queued", "submitted", "mined", "failed"]).optional(),
          limit: z.coerce.number().int().min(1).max(200).default(50),
        }),
      },
      responses: {
        200: jsonResponse(
          "Relayed authorizations",
          z.object({ data: z.array(z.record(z.string(), z.unknown())), totalGasCostWei: z.string() }),
        ),
        ...problemResponses,
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      let select = context.store
        .selectFrom("relayed_authorization")
        .innerJoin("checkout_session", "checkout_session.id", "relayed_authorization.session_id")
        .selectAll("relayed_authorization")
        .select(["checkout_session.partner_id", "checkout_session.order_id"])
        .orderBy("relayed_authorization.created_at", "desc")
        .limit(query.limit);
      if (query.status !== undefined) select = select.where("relayed_authorization.status", "=", query.status);
      const rows = await select.execute();
      const data = rows.map((row) => ({
        ...relayView(row),
        partnerId: row.partner_id,
        orderId: row.order_id,
        sessionId: row.session_id,
      }));
      const totalGasCostWei = rows.reduce((sum, row) => sum + BigInt(row.gas_cost_wei ?? "0"), 0n).toString();
      return c.json({ data, totalGasCostWei }, 200);
    },
  );
}
