import { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import type { AppContext } from "./app-context.js";
import { emptyJsonBodyIsNoBody } from "./http/empty-body.js";
import { keepConnectionsOpen } from "./http/keep-alive.js";
import { type Audience, audienceDocument, finishOpenApiDocument, type OpenApiDocument } from "./http/openapi-contract.js";
import { ProblemError, problem, problemResponse, problems } from "./http/problem.js";
import { limitBody, limitRate, type RequestLimits } from "./http/request-limits.js";
import { RETRY_AFTER_SECONDS, unavailableProblemFor } from "./http/unavailable-problems.js";
import { unmatchedRouteHandler } from "./http/unmatched-routes.js";
import { ensureChallenge } from "./http/www-authenticate.js";
import { logJson } from "./logging/redact.js";
import { partnerAuth } from "./partners/partner-auth.js";
import { ledgerRoutes, periodRoutes, reportIdentityRoutes, reportRoutes } from "./routes/accounting.js";
import { apiKeyRoutes } from "./routes/api-keys.js";
import type { AppEnv } from "./routes/app-env.js";
import { brandingRoutes, logoRoutes } from "./routes/branding.js";
import { checkoutSessionRoutes } from "./routes/checkout-sessions.js";
import { consoleRoutes } from "./routes/console.js";
import { docsRoutes } from "./routes/docs.js";
import { eventsRoutes, registerEventWebhooks } from "./routes/events.js";
import { healthRoutes } from "./routes/health.js";
import { hostedPageRoutes } from "./routes/hosted-pages.js";
import { orderReadRoutes, orderRoutes } from "./routes/orders.js";
import { paymentRoutes } from "./routes/payments.js";
import { issuerPurchaseRefundRoutes, issuerRefundsAsPartner } from "./routes/portals/issuer-refund-routes.js";
import { memberRoutes } from "./routes/portals/partner-member-routes.js";
import { partnerPortalRoutes } from "./routes/portals/partner-portal-routes.js";
import { portalRoutes } from "./routes/portals/portal-routes.js";
import { publicAuthorizationRoutes } from "./routes/public-authorizations.js";
import { publicCheckoutRoutes } from "./routes/public-checkout.js";
import { publicRefundRoutes } from "./routes/public-refunds.js";
import { refundRoutes } from "./routes/refunds.js";
import { orderRewardRoutes, publicRewardRoutes, rewardRoutes } from "./routes/rewards.js";
import { transfersRoutes } from "./routes/transfers.js";
import { webhookEndpointsRoutes } from "./routes/webhook-endpoints.js";
import { adminBooksAccess } from "./sign-in/admin-books-access.js";
import { requireAdminMemberToChange, requirePartnerMember } from "./sign-in/partner-portal.js";

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

  const requirePartner = partnerAuth(context.store);
  /** Mounts routes that partner servers call with their API key. */
  // biome-ignore lint/suspicious/noExplicitAny: sub-apps differ in their route schemas only
  const partnerRoutes = (prefix: string, routes: Hono<any, any, any>, auth = requirePartner) => {
    app.use(prefix, auth);
    app.use(`${prefix}/*`, auth);
    app.route(prefix, routes);
  };
  /** Accounting reads (docs/accounting.md): an auditor key without `partnerId=` reads every partner's books. */
  const acrossPartners = partnerAuth(context.store, { acrossPartners: true });

  const requireMember = requirePartnerMember(context);
  /**
   * The console's partner portal: the same route handlers as `/v1`, behind a member
   * wallet's session instead of the API key (both set the same `partner`).
   */
  // biome-ignore lint/suspicious/noExplicitAny: sub-apps differ in their route schemas only
  const memberPortalRoutes = (prefix: string, routes: Hono<any, any, any>, options: { adminChanges?: boolean } = {}) => {
    for (const path of [prefix, `${prefix}/*`]) {
      app.use(path, requireMember);
      if (options.adminChanges) app.use(path, requireAdminMemberToChange);
    }
    app.route(prefix, routes);
  };

  app.route("/v1/health", healthRoutes(context));
  partnerRoutes("/v1/transfers", transfersRoutes(context));
  partnerRoutes("/v1/webhook-endpoints", webhookEndpointsRoutes(context));
  partnerRoutes("/v1/events", eventsRoutes(context));
  partnerRoutes("/v1/checkout/sessions", checkoutSessionRoutes(context));
  partnerRoutes("/v1/orders", orderRoutes(context), acrossPartners);
  partnerRoutes("/v1/payments", paymentRoutes(context));
  partnerRoutes("/v1/members", memberRoutes(context, [{ apiKey: [] }]));
  memberPortalRoutes("/api/partner/webhook-endpoints", webhookEndpointsRoutes(context), { adminChanges: true });
  memberPortalRoutes("/api/partner/events", eventsRoutes(context));
  memberPortalRoutes("/api/partner/checkout/sessions", checkoutSessionRoutes(context));
  memberPortalRoutes("/api/partner/orders", orderRoutes(context));
  memberPortalRoutes("/api/partner/payments", paymentRoutes(context));
  memberPortalRoutes("/api/partner/members", memberRoutes(context, [{ portalSession: [] }]), { adminChanges: true });
  memberPortalRoutes("/api/partner/branding", brandingRoutes(context), { adminChanges: true });
  for (const path of ["/api/partner/profile", "/api/partner/api-keys", "/api/partner/api-keys/*"]) app.use(path, requireMember);
  for (const path of ["/api/partner/api-keys", "/api/partner/api-keys/*"]) app.use(path, requireAdminMemberToChange);
  app.route("/api/partner", partnerPortalRoutes(context));
  app.route("/console", consoleRoutes());
  // Rewards (docs/rewards.md): the order routes' authentication already covers /v1/orders/*.
  partnerRoutes("/v1/rewards", rewardRoutes(context));
  app.route("/v1/orders", orderRewardRoutes(context));
  // Rewards move the partner's money: in the console only an admin member changes them.
  memberPortalRoutes("/api/partner/rewards", rewardRoutes(context), { adminChanges: true });
  app.use("/api/partner/orders/*/rewards", requireAdminMemberToChange);
  app.route("/api/partner/orders", orderRewardRoutes(context));
  app.route("/v1/public/rewards", publicRewardRoutes(context));
  partnerRoutes("/v1/branding", brandingRoutes(context));
  // Accounting (issue 27, docs/accounting.md): read-only keys, the ledger, reconciliation.
  partnerRoutes("/v1/api-keys", apiKeyRoutes(context));
  partnerRoutes("/v1/ledger", ledgerRoutes(context), acrossPartners);
  partnerRoutes("/v1/reports/periods", periodRoutes(context));
  partnerRoutes("/v1/reports", reportRoutes(context), acrossPartners);
  app.route("/v1/public/report-identity", reportIdentityRoutes(context));
  app.route("/", logoRoutes(context));
  app.route("/v1/public/checkout", publicCheckoutRoutes(context));
  app.route("/v1/public/checkout", publicAuthorizationRoutes(context));
  app.route("/", hostedPageRoutes(context));
  app.route("/api", portalRoutes(context));
  // Refunds (SPEC 15, docs/refunds.md)
  partnerRoutes("/v1/refunds", refundRoutes(context));
  memberPortalRoutes("/api/partner/refunds", refundRoutes(context));
  // The console's Auditor view (docs/console.md): the same accounting reads behind a member's
  // session, read-only (these routers have GET routes only); the orders list is /api/partner/orders.
  memberPortalRoutes("/api/partner/ledger", ledgerRoutes(context));
  memberPortalRoutes("/api/partner/reports", reportRoutes(context));
  // The operator's books across partners (issue 27, docs/accounting.md): the same read handlers
  // behind an admin portal session; `partnerId=` narrows to one partner, as for an auditor key.
  const adminBooks = adminBooksAccess(context);
  // biome-ignore lint/suspicious/noExplicitAny: sub-apps differ in their route schemas only
  const adminBooksRoutes: [string, Hono<any, any, any>][] = [
    ["/api/admin/ledger", ledgerRoutes(context)],
    ["/api/admin/reports", reportRoutes(context)],
    ["/api/admin/orders", orderReadRoutes(context)],
  ];
  for (const [prefix, routes] of adminBooksRoutes) {
    for (const path of [prefix, `${prefix}/*`]) app.use(path, ...adminBooks);
    app.route(prefix, routes);
  }
  app.route("/v1/public/refunds", publicRefundRoutes(context));
  // RWA refunds by the issuer (issue 26, docs/refunds.md "Issuers"): a purchase's refunds, and the
  // partner's refund routes behind the issuer's session, as its own partner.
  app.route("/api/issuer", issuerPurchaseRefundRoutes(context));
  app.route("/api/issuer/refunds", issuerRefundsAsPartner(context));

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
  app.get("/openapi.json", (c) => c.json(openApi()));
  app.get("/openapi/:file", (c) => {
    const audience = c.req.param("file").replace(/\.json$/, "");
    if (!["partner", "browser", "portals"].includes(audience))
      throw problems.notFound(`Document ${c.req.param("file").slice(0, 40)}`);
    return c.json(audienceDocument(openApi(), audience as Audience));
  });
  app.route("/docs", docsRoutes(openApi));
  // Last, so that only what no route took reaches it: Ponder's own 404 is text/plain.
  const unmatched = unmatchedRouteHandler(app);
  for (const path of ["/v1", "/v1/*", "/api", "/api/*"]) app.all(path, unmatched);
  return app;
}
