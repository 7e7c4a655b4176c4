import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { adminAuditRoutes } from "./admin-audit-routes.js";
import { adminDeliveryRoutes } from "./admin-delivery-routes.js";
import { adminInvestorRoutes } from "./admin-investor-routes.js";
import { adminIssuerRoutes } from "./admin-issuer-routes.js";
import { adminOfferingRoutes } from "./admin-offering-routes.js";
import { adminPartnerRoutes } from "./admin-partner-routes.js";
import type { AdminEnv } from "./admin-route-kit.js";

/**
 * `/api/admin`: compliance and operations, one file per resource. Every change is
 * written to the audit log with the change.
 */
export function adminRoutes(context: AppContext) {
  return new OpenAPIHono<AdminEnv>()
    .route("/", adminIssuerRoutes(context))
    .route("/", adminInvestorRoutes(context))
    .route("/", adminOfferingRoutes(context))
    .route("/", adminPartnerRoutes(context))
    .route("/", adminDeliveryRoutes(context))
    .route("/", adminAuditRoutes(context));
}
