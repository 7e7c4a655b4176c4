import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { pageOfAudit } from "../../audit/audit-log.js";
import { type AdminEnv, adminRouteKit } from "./admin-route-kit.js";
import { AddressSchema, jsonResponse, PageQuery, problemResponses } from "./schemas.js";

const AuditEntrySchema = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    actor: z.object({ role: z.enum(["investor", "issuer", "admin", "partner", "operator"]), address: z.string() }),
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string() }),
    details: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .openapi("AuditEntry");

/** `/api/admin/audit-log`: every admin and issuer action, append-only. */
export function adminAuditRoutes(context: AppContext) {
  const { route } = adminRouteKit(context);
  return new OpenAPIHono<AdminEnv>().openapi(
    route({
      method: "get",
      path: "/audit-log",
      summary: "Every admin and issuer action, newest first (append-only)",
      request: {
        query: PageQuery.extend({
          action: z.string().max(100).optional(),
          actor: AddressSchema.optional(),
          targetId: z.string().max(100).optional(),
        }),
      },
      responses: {
        200: jsonResponse("A page of entries", z.object({ data: z.array(AuditEntrySchema), nextCursor: z.string().nullable() })),
        ...problemResponses,
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      return c.json(
        await pageOfAudit(context.store, {
          cursor: query.cursor,
          limit: query.limit,
          action: query.action,
          actor: query.actor,
          targetId: query.targetId,
        }),
        200,
      );
    },
  );
}
