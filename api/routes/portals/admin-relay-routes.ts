import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { listRelays, relayView } from "../../gasless/gasless-view.js";
import { relaySpendByPartner } from "../../gasless/relay-charges.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { jsonResponse, problemResponses } from "./schemas.js";

/** `/api/admin/relayed-authorizations`: every gasless payment the relayers sent, with the gas each cost. */
export function adminRelayRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    declareRoute({
      method: "get",
      path: "/",
      tags: ["Admin portal"],
      summary:
        "Relayed EIP-3009 authorizations, newest first, with status, transaction and gas spent (wei), and today's spend of the relayer per partner against its limits",
      security: CALLERS.admin,
      request: {
        query: z.object({
          status: z.enum(["queued", "submitted", "mined", "failed"]).optional(),
          limit: z.coerce.number().int().min(1).max(200).default(50),
        }),
      },
      responses: {
        200: jsonResponse(
          "Relayed authorizations",
          z.object({
            data: z.array(z.record(z.string(), z.unknown())),
            totalGasCostWei: z.string(),
            spendByPartner: z
              .object({
                day: z.string().openapi({ description: "UTC day the quotas and budgets count" }),
                partnerDailyRelays: z.number().int(),
                partnerDailyGasWei: z.string(),
                partners: z.array(
                  z.object({
                    partnerId: z.string(),
                    chainId: z.number().int(),
                    relays: z.number().int(),
                    spentWei: z.string(),
                    remainingWei: z.string(),
                  }),
                ),
              })
              .openapi({
                description:
                  "What the relayer spent today per partner and network (mined gas, plus the maximum of what is in flight)",
              }),
          }),
        ),
        ...problemResponses,
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const rows = await listRelays(context.store, { status: query.status, limit: query.limit });
      const data = rows.map((row) => ({
        ...relayView(row),
        partnerId: row.partner_id,
        orderId: row.order_id,
        sessionId: row.session_id,
      }));
      const totalGasCostWei = rows.reduce((sum, row) => sum + BigInt(row.gas_cost_wei ?? "0"), 0n).toString();
      const limits = context.settings.relayLimits;
      const spend = await relaySpendByPartner(context.store, limits);
      const spendByPartner = {
        day: spend.day,
        partnerDailyRelays: limits.partnerDailyRelays,
        partnerDailyGasWei: limits.partnerDailyGasWei.toString(),
        partners: spend.partners.map((partner) => ({
          ...partner,
          spentWei: partner.spentWei.toString(),
          remainingWei: partner.remainingWei.toString(),
        })),
      };
      return c.json({ data, totalGasCostWei, spendByPartner }, 200);
    },
  );
}
