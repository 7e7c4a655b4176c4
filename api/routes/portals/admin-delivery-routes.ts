import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { DELIVERY_STATUSES, listDeliveries } from "../../outbox/deliveries.js";
import { DeliverySchema } from "../events.js";
import { type AdminEnv, adminRouteKit } from "./admin-route-kit.js";
import { jsonResponse, PageQuery, problemResponses } from "./schemas.js";

/** A delivery as partners see it (`GET /v1/events/{id}/deliveries`), with whose event it is. */
const AdminDeliverySchema = DeliverySchema.extend({ eventType: z.string(), partnerId: z.string() });

/** `/api/admin/event-deliveries`: webhook deliveries of every partner. */
export function adminDeliveryRoutes(context: AppContext) {
  const { route } = adminRouteKit(context);
  return new OpenAPIHono<AdminEnv>().openapi(
    route({
      method: "get",
      path: "/event-deliveries",
      summary: "Webhook deliveries of every partner, newest first",
      request: {
        query: PageQuery.extend({ partnerId: z.string().max(100).optional(), status: z.enum(DELIVERY_STATUSES).optional() }),
      },
      responses: {
        200: jsonResponse(
          "A page of deliveries",
          z.object({ data: z.array(AdminDeliverySchema), nextCursor: z.string().nullable() }),
        ),
        ...problemResponses,
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      return c.json(await listDeliveries(context.store, query), 200);
    },
  );
}
