import { join } from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { authenticateClientToken } from "../checkout/client-tokens.js";
import { findSession } from "../checkout/session-record.js";
import { paymentView } from "../checkout/session-view.js";
import { HOSTED_ASSETS_DIR, hostedAssetName } from "../hosted/assets.js";
import { checkoutFrameAncestor } from "../hosted/frame-origins.js";
import { checkoutPage, claimPage, refundPage, subscribePage, subscriptionPage } from "../hosted/pages.js";
import { paymentQrSvg } from "../hosted/payment-qr.js";
import { hostedPageHeaders } from "../hosted/security-headers.js";
import { admit, CALLERS } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problems } from "../http/problem.js";
import { noFile, servedFrom } from "../http/static-files.js";
import { readFrameOrigins } from "../partners/branding.js";
import type { AppEnv } from "./app-env.js";

const SESSION_ID = /^[A-Za-z0-9_-]{1,100}$/;
const ClientTokenBody = z.object({ clientToken: z.string().min(1).max(200) });

function sessionIdOf(value: string): string {
  if (!SESSION_ID.test(value)) throw problems.notFound(`Checkout session ${value.slice(0, 100)}`);
  return value;
}

/**
 * The hosted checkout (`/checkout/:sessionId`, framed by the partner's component),
 * the certificate claim page (`/claim/:sessionId`) and their own assets. The pages
 * hold no session data until the browser proves the client token.
 */
export function hostedPageRoutes(context: AppContext) {
  const app = new OpenAPIHono<AppEnv>();

  const noStore = { "Cache-Control": "no-store" };
  // Framed only by the page the component names in `parentOrigin`, when its partner declared
  // it (or a loopback page in local mode); standalone, by nobody (issue 24, finding 7).
  app.get(
    "/checkout/:sessionId",
    admit(CALLERS.anyone),
    async (c, next) => {
      const sessionId = sessionIdOf(c.req.param("sessionId"));
      const session = await findSession(context.store, sessionId);
      const frameAncestor = checkoutFrameAncestor({
        parentOrigin: c.req.query("parentOrigin"),
        declared: session === undefined ? [] : await readFrameOrigins(context.store, session.partnerId),
        localMode: context.settings.localMode,
      });
      return hostedPageHeaders(frameAncestor)(c, next);
    },
    (c) => {
      const sessionId = sessionIdOf(c.req.param("sessionId"));
      return c.html(checkoutPage({ sessionId }), 200, noStore);
    },
  );

  // The EIP-681 link as an SVG QR code, for the checkout page (token in the body, like every browser call).
  app.post("/checkout/:sessionId/qr", admit(CALLERS.anyone), async (c) => {
    const sessionId = sessionIdOf(c.req.param("sessionId"));
    const parsed = ClientTokenBody.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) throw problems.invalidRequest("Send `{ clientToken }` as JSON.");
    const session = await authenticateClientToken(context.store, {
      sessionId,
      clientToken: parsed.data.clientToken,
      use: "read",
    });
    const svg = await paymentQrSvg(paymentView(session).uri);
    return c.body(svg, 200, {
      "Content-Type": "image/svg+xml; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    });
  });

  app.get("/claim/:sessionId", admit(CALLERS.anyone), hostedPageHeaders(), (c) => {
    const sessionId = sessionIdOf(c.req.param("sessionId"));
    return c.html(claimPage({ sessionId }), 200, noStore);
  });

  // The shop's "claim your certificate" form posts the client token here, so it never rides in a URL.
  app.post("/claim/:sessionId", admit(CALLERS.anyone), hostedPageHeaders(), async (c) => {
    const sessionId = sessionIdOf(c.req.param("sessionId"));
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const token = form.clientToken;
    const clientToken = typeof token === "string" && token.length > 0 && token.length <= 200 ? token : undefined;
    return c.html(claimPage({ sessionId, clientToken }), 200, noStore);
  });

  // The customer's refund page: the refund token stays in the fragment (`#rt=`), read by the page's script.
  app.get("/refund/:refundId", admit(CALLERS.anyone), hostedPageHeaders(), (c) => {
    const refundId = c.req.param("refundId");
    if (!SESSION_ID.test(refundId)) throw problems.notFound(`Refund ${refundId.slice(0, 100)}`);
    return c.html(refundPage({ refundId }), 200, noStore);
  });

  // The customer's subscription pages: the client token stays in the fragment (`#st=`), read by the page's script.
  const subscriptionIdOf = (value: string) => {
    if (!SESSION_ID.test(value)) throw problems.notFound(`Subscription ${value.slice(0, 100)}`);
    return value;
  };
  app.get("/subscribe/:subscriptionId", admit(CALLERS.anyone), hostedPageHeaders(), (c) =>
    c.html(subscribePage({ subscriptionId: subscriptionIdOf(c.req.param("subscriptionId")) }), 200, noStore),
  );
  app.get("/subscription/:subscriptionId", admit(CALLERS.anyone), hostedPageHeaders(), (c) =>
    c.html(subscriptionPage({ subscriptionId: subscriptionIdOf(c.req.param("subscriptionId")) }), 200, noStore),
  );

  // Only the listed names, each a file of HOSTED_ASSETS_DIR; serveStatic takes a root
  // relative to the working directory, worked out per request so any start directory works.
  app.get("/assets/:name", admit(CALLERS.anyone), async (c) => {
    const name = hostedAssetName(c.req.param("name"));
    if (name === undefined) throw problems.notFound(`Asset ${c.req.param("name").slice(0, 100)}`);
    const served = await serveStatic({
      path: join(servedFrom(HOSTED_ASSETS_DIR), name),
      onFound: (_path, found) => {
        found.header("Cache-Control", "public, max-age=300");
        found.header("X-Content-Type-Options", "nosniff");
        // The component script is loaded by partner pages on other origins.
        found.header("Cross-Origin-Resource-Policy", "cross-origin");
      },
    })(c, noFile);
    if (served === undefined) throw problems.notFound(`Asset ${name}`);
    return served;
  });

  const page = (path: string, summary: string, description: string) =>
    app.openAPIRegistry.registerPath({
      method: "get",
      path,
      summary,
      description,
      request: { params: z.object({ sessionId: z.string() }) },
      responses: { 200: { description: "HTML page", content: { "text/html": { schema: z.string() } } } },
    });
  page(
    "/checkout/{sessionId}",
    "Hosted checkout page (framed by the checkout component)",
    "Load `/assets/checkout-component.js` on your page and call `UsdcCheckout.mount(element, { sessionId, clientToken, onComplete, " +
      "onStateChange })`; the component frames this page and hands it the client token by postMessage.",
  );
  app.openAPIRegistry.registerPath({
    method: "post",
    path: "/checkout/{sessionId}/qr",
    summary: "The session's EIP-681 payment link as an SVG QR code (browser)",
    description: "The checkout page draws it; the client token rides in the JSON body, as in every browser call.",
    request: {
      params: z.object({ sessionId: z.string() }),
      body: { required: true, content: { "application/json": { schema: ClientTokenBody } } },
    },
    responses: {
      200: { description: "SVG image", content: { "image/svg+xml": { schema: z.string() } } },
      ...errorResponses("invalid_client_token", "not_found", "session_expired"),
    },
  });
  page(
    "/claim/{sessionId}",
    "Certificate claim page",
    "Open it with a form POST of `clientToken` to the same path (or `UsdcCheckout.openClaim`); it connects the customer's wallet and mints.",
  );
  app.openAPIRegistry.registerPath({
    method: "get",
    path: "/refund/{refundId}",
    summary: "The customer's refund page",
    description:
      "Open the refund's `customerUrl` (`/refund/<id>#rt=<token>`): the page reads the token from the fragment, shows the refund and asks for the receiving address.",
    request: { params: z.object({ refundId: z.string() }) },
    responses: { 200: { description: "HTML page", content: { "text/html": { schema: z.string() } } } },
  });
  for (const [path, summary, description] of [
    [
      "/subscribe/{subscriptionId}",
      "The hosted subscribe page",
      "Open the subscription's `url` (`/subscribe/<id>#st=<token>`): the page reads the token from the fragment, states the terms in plain words, and has the customer's wallet sign them and a permit; the service relays.",
    ],
    [
      "/subscription/{subscriptionId}",
      "The customer's subscription page",
      "Open the subscription's `customerUrl` (`/subscription/<id>#st=<token>`): its state, next charge, past charges with their transactions, and a signed, relayed Cancel.",
    ],
  ] as const) {
    app.openAPIRegistry.registerPath({
      method: "get",
      path,
      summary,
      description,
      request: { params: z.object({ subscriptionId: z.string() }) },
      responses: { 200: { description: "HTML page", content: { "text/html": { schema: z.string() } } } },
    });
  }
  return app;
}
