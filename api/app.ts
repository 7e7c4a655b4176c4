import { OpenAPIHono } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import type { AppContext } from "./app-context.js";
import type { RequestLimits } from "./config/option-types.js";
import { admit, assertEveryRouteDeclared, CALLERS, provideAdmission } from "./http/callers.js";
import { closeCrossOriginReads } from "./http/cors-policy.js";
import { emptyJsonBodyIsNoBody } from "./http/empty-body.js";
import { keepConnectionsOpen } from "./http/keep-alive.js";
import { type Audience, audienceDocument, finishOpenApiDocument, type OpenApiDocument } from "./http/openapi-contract.js";
import { ProblemError, problem, problemResponse, problems } from "./http/problem.js";
import { limitBody, limitRate } from "./http/request-limits.js";
import { RETRY_AFTER_SECONDS, unavailableProblemFor } from "./http/unavailable-problems.js";
import { unmatchedRouteHandler } from "./http/unmatched-routes.js";
import { ensureChallenge } from "./http/www-authenticate.js";
import { logJson } from "./logging/redact.js";
import { ledgerRoutes, periodRoutes, reportIdentityRoutes, reportRoutes } from "./routes/accounting.js";
import { apiKeyRoutes } from "./routes/api-keys.js";
import type { AppEnv } from "./routes/app-env.js";
import { brandingRoutes, logoRoutes } from "./routes/branding.js";
import { checkoutSessionRoutes } from "./routes/checkout-sessions.js";
import { consoleRoutes, faviconRoutes } from "./routes/console.js";
import { docsRoutes } from "./routes/docs.js";
import { eventsRoutes, registerEventWebhooks } from "./routes/events.js";
import { healthRoutes } from "./routes/health.js";
import { hostedPageRoutes } from "./routes/hosted-pages.js";
import { orderReadRoutes, orderRoutes } from "./routes/orders.js";
import { paymentRoutes } from "./routes/payments.js";
import { issuerPurchaseRefundRoutes } from "./routes/portals/issuer-refund-routes.js";
import { memberRoutes } from "./routes/portals/partner-member-routes.js";
import { partnerPortalRoutes } from "./routes/portals/partner-portal-routes.js";
import { portalRoutes } from "./routes/portals/portal-routes.js";
import { publicAuthorizationRoutes } from "./routes/public-authorizations.js";
import { publicCheckoutRoutes } from "./routes/public-checkout.js";
import { publicRefundRoutes } from "./routes/public-refunds.js";
import { publicSubscriptionRoutes } from "./routes/public-subscriptions.js";
import { refundRoutes } from "./routes/refunds.js";
import { orderRewardRoutes, publicRewardRoutes, rewardRoutes } from "./routes/rewards.js";
import { subscriptionRoutes } from "./routes/subscriptions.js";
import { transfersRoutes } from "./routes/transfers.js";
import { webhookEndpointsRoutes } from "./routes/webhook-endpoints.js";
import { callerAdmission } from "./sign-in/admit-callers.js";

/** Routes a browser reaches without a credential besides `/v1/public/*` and the three portals' sign-in. */
const BROWSER_ROUTES_WITHOUT_CREDENTIAL = ["/api/partner/auth/*", "/checkout/*", "/claim/*", "/refund/*"];

/**
 * The HTTP surface. Ponder's server mounts it at `/` (it owns /health, /ready,
 * /status, /metrics, /graphql and /sql/*); everything here lives under /v1, /api
 * and a few pages.
 */
export function createApp(context: AppContext, limits: RequestLimits = context.settings.requestLimits) {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const errors = result.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message }));
        throw problems.invalidRequest(errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; "), errors);
      }
    },
  });

  // First, so that it sees every answer last: Ponder's open CORS headers come off the
  // portals' and partners' answers (docs/security.md, "Cross-origin access").
  app.use("*", closeCrossOriginReads());
  app.use("*", requestId());
  app.use("*", keepConnectionsOpen());
  // Limits first, so an oversized body or a flood is refused before anything reads or looks it up.
  app.use("*", limitBody(limits.bodyBytes));
  for (const prefix of ["/v1/public/*", "/api/investor/auth/*", "/api/issuer/auth/*", "/api/admin/auth/*"]) {
    app.use(prefix, limitBody(limits.publicBodyBytes));
  }
  // Every other route a browser reaches without a credential (issue 24): the partner
  // portal's sign-in, the hosted pages and their QR and claim posts.
  for (const prefix of BROWSER_ROUTES_WITHOUT_CREDENTIAL) app.use(prefix, limitBody(limits.publicBodyBytes));
  app.use("*", emptyJsonBodyIsNoBody());
  // One counter per kind, shared by its paths: three portals do not triple the sign-in allowance.
  const signInRate = limitRate("sign-in", limits.signIn, limits.trustProxy);
  for (const prefix of ["/api/investor/auth/*", "/api/issuer/auth/*", "/api/admin/auth/*", "/api/partner/auth/*"]) {
    app.use(prefix, signInRate);
  }
  // Hash submissions and authorizations may each cost an RPC look-up of a receipt.
  const lookupRate = limitRate("look-up", limits.lookups, limits.trustProxy);
  for (const path of [
    "/v1/public/checkout/payments",
    "/v1/public/checkout/sessions/*/authorizations",
    "/api/rwa/settlements/*",
    // A reward claim may read the funder's allowance over RPC or send a relayed transaction.
    "/v1/public/rewards/*",
  ]) {
    app.use(path, lookupRate);
  }
  const publicRate = limitRate("public", limits.publicCalls, limits.trustProxy);
  app.use("/v1/public/*", publicRate);
  // The hosted pages count with /v1/public: one allowance per browser, whichever it calls.
  for (const prefix of ["/checkout/*", "/claim/*", "/refund/*"]) app.use(prefix, publicRate);
  app.onError((error, c) => {
    if (error instanceof ProblemError) {
      if (error.status === 401) ensureChallenge(c);
      if (error.code === "store_unavailable" || error.code === "rpc_unavailable" || error.code === "index_not_ready")
        c.header("Retry-After", String(RETRY_AFTER_SECONDS));
      const retryAfter = error.extensions.retryAfterSeconds;
      if (typeof retryAfter === "number") c.header("Retry-After", String(retryAfter));
      return problemResponse(c, error);
    }
    const unavailable = unavailableProblemFor(error);
    if (unavailable !== undefined) {
      logJson({ level: "warn", msg: unavailable.title, code: unavailable.code, path: c.req.path, error: String(error) });
      c.header("Retry-After", String(RETRY_AFTER_SECONDS));
      return problemResponse(c, unavailable);
    }
    if (error instanceof HTTPException && error.status < 500) {
      return problemResponse(c, problems.invalidRequest(error.message || "The request could not be read."));
    }
    logJson({ level: "error", msg: "unhandled error", path: c.req.path, error: String(error) });
    return problemResponse(c, problem("internal_error", "Something went wrong on our side."));
  });
  app.notFound((c) => problemResponse(c, problems.notFound(`${c.req.method} ${c.req.path}`)));

  // Who may call each route is declared beside it (api/http/callers.ts) and enforced by the
  // middleware the route carries; the app only hands that middleware the store to check with.
  // A router mounted under two prefixes admits the same callers under both.
  app.use("*", provideAdmission(callerAdmission(context)));

  app.route("/v1/health", healthRoutes(context));
  app.route("/v1/transfers", transfersRoutes(context));
  app.route("/v1/webhook-endpoints", webhookEndpointsRoutes(context));
  app.route("/v1/events", eventsRoutes(context));
  app.route("/v1/checkout/sessions", checkoutSessionRoutes(context));
  app.route("/v1/orders", orderRoutes(context));
  app.route("/v1/orders", orderRewardRoutes(context));
  app.route("/v1/payments", paymentRoutes(context));
  app.route("/v1/members", memberRoutes(context));
  app.route("/v1/rewards", rewardRoutes(context));
  app.route("/v1/branding", brandingRoutes(context));
  app.route("/v1/api-keys", apiKeyRoutes(context));
  app.route("/v1/ledger", ledgerRoutes(context));
  app.route("/v1/reports/periods", periodRoutes(context));
  app.route("/v1/reports", reportRoutes(context));
  app.route("/v1/public/report-identity", reportIdentityRoutes(context));
  app.route("/v1/refunds", refundRoutes(context));
  app.route("/v1/subscriptions", subscriptionRoutes(context));
  app.route("/v1/public/checkout", publicCheckoutRoutes(context));
  app.route("/v1/public/checkout", publicAuthorizationRoutes(context));
  app.route("/v1/public/refunds", publicRefundRoutes(context));
  app.route("/v1/public/subscriptions", publicSubscriptionRoutes(context));
  app.route("/v1/public/rewards", publicRewardRoutes(context));
  // The console's partner portal: the same routers as /v1, which admit a member's session too.
  for (const [prefix, routes] of [
    ["/api/partner/webhook-endpoints", webhookEndpointsRoutes(context)],
    ["/api/partner/events", eventsRoutes(context)],
    ["/api/partner/checkout/sessions", checkoutSessionRoutes(context)],
    ["/api/partner/orders", orderRoutes(context)],
    ["/api/partner/orders", orderRewardRoutes(context)],
    ["/api/partner/payments", paymentRoutes(context)],
    ["/api/partner/members", memberRoutes(context)],
    ["/api/partner/branding", brandingRoutes(context)],
    ["/api/partner/rewards", rewardRoutes(context)],
    ["/api/partner/refunds", refundRoutes(context)],
    ["/api/partner/subscriptions", subscriptionRoutes(context)],
    ["/api/partner/ledger", ledgerRoutes(context)],
    ["/api/partner/reports", reportRoutes(context)],
    // The operator's books across partners (docs/accounting.md): the read routes for an admin's session.
    ["/api/admin/ledger", ledgerRoutes(context, "operator")],
    ["/api/admin/reports", reportRoutes(context, "operator")],
    ["/api/admin/orders", orderReadRoutes(context, "operator")],
    // RWA refunds by the issuer (docs/refunds.md "Issuers"): the refund routes for an issuer as its own partner.
    ["/api/issuer/refunds", refundRoutes(context, "issuer")],
  ] as const) {
    app.route(prefix, routes);
  }
  app.route("/api/partner", partnerPortalRoutes(context));
  app.route("/api/issuer", issuerPurchaseRefundRoutes(context));
  app.route("/api", portalRoutes(context));
  app.route("/console", consoleRoutes());
  app.route("/", faviconRoutes());
  app.route("/", logoRoutes(context));
  app.route("/", hostedPageRoutes(context));

  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", { type: "http", scheme: "bearer" });
  registerEventWebhooks(app);
  const openApiConfig = {
    openapi: "3.1.0",
    info: {
      title: "USDC settlement service",
      version: "1.0.0",
      description: "Checkout sessions, settlement of USDC transfers on Base, signed events, certificates and RWA portals.",
    },
  };
  // Built once, on first request: every route is registered by then.
  let finished: OpenApiDocument | undefined;
  const openApi = () => {
    finished ??= finishOpenApiDocument(
      app.getOpenAPI31Document(openApiConfig) as unknown as OpenApiDocument,
      context.settings.publicBaseUrl,
    );
    return finished;
  };
  app.get("/openapi.json", admit(CALLERS.anyone), (c) => c.json(openApi()));
  app.get("/openapi/:file", admit(CALLERS.anyone), (c) => {
    const audience = c.req.param("file").replace(/\.json$/, "");
    if (!["partner", "browser", "portals"].includes(audience))
      throw problems.notFound(`Document ${c.req.param("file").slice(0, 40)}`);
    return c.json(audienceDocument(openApi(), audience as Audience));
  });
  app.route("/docs", docsRoutes(openApi));
  // Last, so that only what no route took reaches it: Ponder's own 404 is text/plain.
  const unmatched = unmatchedRouteHandler(app);
  for (const path of ["/v1", "/v1/*", "/api", "/api/*"]) app.all(path, unmatched);
  assertEveryRouteDeclared(app.routes);
  return app;
}
