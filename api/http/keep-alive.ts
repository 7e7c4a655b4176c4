import type { IncomingMessage, Server } from "node:http";
import type { MiddlewareHandler } from "hono";

/**
 * How long the server keeps an idle keep-alive connection open. Node's default
 * (5 s) is shorter than the idle timeout of the load balancers and proxies that sit
 * in front of a service (60 s on most), and close to the 4 s after which HTTP
 * clients such as undici (Node's `fetch`) stop reusing a connection: a request sent
 * on a connection the server is closing at that moment fails with ECONNRESET or
 * "other side closed" (seen in the test suite on a loaded machine). The server must
 * be the side that waits longest: 65 s, and the header timeout above it as Node
 * requires.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

const tuned = new WeakSet<Server>();

/**
 * Ponder creates the HTTP server and gives the API entry no handle on it; the first
 * request through each server sets its timeouts (the server applies them to every
 * connection's next idle period, this one's included).
 */
export function keepConnectionsOpen(): MiddlewareHandler {
  return async (c, next) => {
    const server = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket as
      | (IncomingMessage["socket"] & { server?: Server })
      | undefined;
    const http = server?.server;
    if (http !== undefined && !tuned.has(http)) {
      tuned.add(http);
      http.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      http.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
    }
    await next();
  };
}
