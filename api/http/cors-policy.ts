import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { MiddlewareHandler } from "hono";

/**
 * The service's CORS policy (docs/security.md, "Cross-origin access"). Ponder's server
 * answers every path with `cors({ origin: "*" })` before our routes, preflights
 * included (it answers them itself and our app never sees them). That suits the
 * customer's browser routes, which carry no ambient credential, but not the portals'
 * and partners' routes: a page on any origin could read a portal's answers with a
 * token it obtained, and in local mode obtain one from the test-account sign-in.
 *
 * Closed to other origins: `/api` (portals, console, local sign-in) and `/v1` except
 * `/v1/public` (partner API keys are server-side). Everything else keeps Ponder's open
 * policy: `/v1/public/*`, the hosted pages (`/checkout`, `/claim`, `/refund`, `/subscribe`, `/subscription`), the
 * console's and the framed component's assets, the documents, and Ponder's own routes.
 */
export function closedToOtherOrigins(path: string): boolean {
  if (path === "/v1" || path.startsWith("/v1/")) return !path.startsWith("/v1/public/");
  return path === "/api" || path.startsWith("/api/");
}

const CORS_RESPONSE_HEADERS = [
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "access-control-allow-headers",
  "access-control-allow-methods",
  "access-control-expose-headers",
  "access-control-max-age",
];

/**
 * Takes Ponder's CORS headers off every answer of a closed route: a browser then lets no
 * other origin read it. The service's own pages (the console) call it same-origin and
 * need none.
 */
export function closeCrossOriginReads(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (!closedToOtherOrigins(c.req.path)) return;
    for (const name of CORS_RESPONSE_HEADERS) c.res.headers.delete(name);
    c.res.headers.append("Vary", "Origin");
  };
}

/** Answers a preflight of a closed route with no CORS header: the browser then sends nothing. */
function refuseClosedPreflights(listener: (req: IncomingMessage, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "OPTIONS") {
      let path: string;
      try {
        path = new URL(req.url ?? "/", "http://service.invalid").pathname;
      } catch {
        path = "/api";
      }
      if (closedToOtherOrigins(path)) {
        res.writeHead(204, { Vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers" });
        res.end();
        return;
      }
    }
    listener(req, res);
  };
}

const INSTALLED = Symbol.for("usdc-settlement-service.closed-preflights");

/**
 * Ponder answers preflights in a middleware ahead of our app, so the one place left to
 * answer a closed route's preflight is the HTTP server's request listener. Ponder
 * creates its server with `http.createServer` after running our API entry: this wraps
 * the listener of every server created from then on in this process. Idempotent (a
 * `ponder dev` reload runs the entry again).
 */
export function refuseClosedPreflightsInServer(): void {
  const module = http as typeof http & { [INSTALLED]?: true };
  if (module[INSTALLED]) return;
  const createServer = http.createServer;
  module.createServer = ((...args: unknown[]) =>
    Reflect.apply(
      createServer,
      http,
      args.map((arg) =>
        typeof arg === "function" ? refuseClosedPreflights(arg as (req: IncomingMessage, res: ServerResponse) => void) : arg,
      ),
    )) as typeof http.createServer;
  module[INSTALLED] = true;
}
