import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import type { PortalSettings } from "../../config/option-types.js";
import type { AppEnv } from "../app-env.js";
import { adminMemberRoutes } from "./admin-member-routes.js";
import { adminPaymentRoutes } from "./admin-payment-routes.js";
import { adminRelayRoutes } from "./admin-relay-routes.js";
import { adminRewardRoutes } from "./admin-reward-routes.js";
import { adminRoutes } from "./admin-routes.js";
import { authRoutes } from "./auth-routes.js";
import { gaslessPurchaseRoutes } from "./gasless-purchase-routes.js";
import { investorRoutes } from "./investor-routes.js";
import { issuerNetworkRoutes } from "./issuer-network-routes.js";
import { issuerRoutes } from "./issuer-routes.js";
import { offeringRoutes } from "./offering-routes.js";
import { purchaseRoutes } from "./purchase-routes.js";
import { testAccountRoutes } from "./test-account-routes.js";
import { verifyRoutes } from "./verify-routes.js";

/**
 * Everything under `/api` (docs/portals.md): sign-in for the three portals, the RWA
 * families and the issuer and admin operations. Each route names the session role
 * it needs in its own `middleware`, so no prefix-wide guard can shadow sign-in.
 */
export function portalRoutes(context: AppContext, portal: PortalSettings = context.settings.portal) {
  const app = new OpenAPIHono<AppEnv>();
  app.openAPIRegistry.registerComponent("securitySchemes", "portalSession", {
    type: "http",
    scheme: "bearer",
    description: "Token from POST /api/{investor,issuer,admin}/auth/verify; bound to that portal's role",
  });
  // Local mode only: "Sign in with a test account" (absent, so 404, everywhere else).
  if (context.settings.localMode) app.route("/", testAccountRoutes(context));
  return app
    .route("/investor/auth", authRoutes(context, portal, "investor"))
    .route("/issuer/auth", authRoutes(context, portal, "issuer"))
    .route("/admin/auth", authRoutes(context, portal, "admin"))
    .route("/partner/auth", authRoutes(context, portal, "partner"))
    .route("/investor", investorRoutes(context))
    .route("/rwa/offerings", offeringRoutes(context, portal))
    .route("/rwa/verify", verifyRoutes(context, portal))
    .route("/rwa", purchaseRoutes(context, portal))
    .route("/rwa/settlements", gaslessPurchaseRoutes(context))
    .route("/issuer", issuerNetworkRoutes(context))
    .route("/issuer", issuerRoutes(context, portal))
    .route("/admin/payments", adminPaymentRoutes(context))
    .route("/admin/partners", adminMemberRoutes(context))
    .route("/admin/relayed-authorizations", adminRelayRoutes(context))
    .route("/admin/reward-claims", adminRewardRoutes(context))
    .route("/admin", adminRoutes(context));
}
