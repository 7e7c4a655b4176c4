import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { decodeCursor, encodeCursor } from "../http/cursor.js";
import type { PartnerVariables } from "../http/partner-auth.js";
import type { AppEnv } from "./app-env.js";

const listRoute = createRoute({
  method: "get",
  path: "/",
  summary: "Payments the engine recorded, e.g. `status=unresolved` for transfers that matched no session",
  security: [{ apiKey: [] }],
  request: {
    query: z.object({
      status: z.enum(["pending", "settled", "unresolved", "refund_requested", "attached"]).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: { 200: { description: "A page of payments", content: { "application/json": { schema: z.any() } } } },
});

const cursorSchema = z.object({ t: z.number(), h: z.string(), l: z.number() });

export function paymentRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>().openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    let select = context.store.selectFrom("payment").selectAll().where("partner_id", "=", c.get("partner").id);
    if (query.status !== undefined) select = select.where("status", "=", query.status);
    if (query.cursor !== undefined) {
      const after = decodeCursor(query.cursor, cursorSchema);
      select = select.where((eb) =>
        eb.or([
          eb("created_at", ">", after.t),
          eb.and([eb("created_at", "=", after.t), eb("transaction_hash", ">", after.h)]),
          eb.and([eb("created_at", "=", after.t), eb("transaction_hash", "=", after.h), eb("log_index", ">", after.l)]),
        ]),
      );
    }
    const rows = await select.orderBy("created_at").orderBy("transaction_hash").orderBy("log_index").limit(query.limit + 1).execute();
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return c.json(
      {
        data: page.map((row) => ({
          chainId: row.chain_id,
          transactionHash: row.transaction_hash,
          logIndex: row.log_index,
          status: row.status,
          reason: row.reason,
          sessionId: row.session_id,
          from: row.from_address,
          to: row.to_address,
          amount: row.amount,
          blockNumber: String(row.block_number),
          minedAt: new Date(Number(row.block_timestamp) * 1000).toISOString(),
          resolution: row.resolution,
        })),
        nextCursor:
          rows.length > query.limit && last !== undefined
            ? encodeCursor({ t: Number(last.created_at), h: last.transaction_hash, l: last.log_index })
            : null,
      },
      200,
    );
  });
}
