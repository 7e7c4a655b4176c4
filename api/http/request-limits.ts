import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { rateLimiter } from "hono-rate-limiter";
import type { RateLimit } from "../config/option-types.js";
import { clientIp } from "./client-ip.js";
import { problem, problemResponse } from "./problem.js";

/**
 * Limits every request meets before a handler runs (docs/security.md, "Limits").
 * Rate limits count per client IP in process memory: each API replica counts on
 * its own, so behind N replicas the effective limit is N times the figure.
 */

/**
 * Largest declared body the service still reads (and throws away) before it
 * answers 413, so that an ordinary HTTP client, still writing its body, reads the
 * answer instead of a reset, and the connection stays usable. Above it, or past
 * `DRAIN_MS`, the service answers at once and drops the connection.
 */
const DRAIN_MAX_BYTES = 8 * 1024 * 1024;
const DRAIN_MS = 10_000;

/**
 * Refuses a body over `maxBytes` with a 413 problem; nothing over the limit is
 * ever kept in memory. A declared `Content-Length` up to `DRAIN_MAX_BYTES` is read
 * and discarded first, then refused, and the connection carries on. A larger
 * declared body, or a chunked one (refused as soon as it passes the limit), is
 * answered without reading the rest: the connection cannot carry another request,
 * so the answer says `Connection: close` and the server drops the connection after
 * it. A client that kept it in its keep-alive pool would otherwise send its next
 * request into a connection being torn down and see a reset.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: async (c) => {
      if (!(await drainDeclaredBody(c.req.raw))) c.header("Connection", "close");
      return problemResponse(
        c,
        problem("payload_too_large", `This route takes at most ${maxBytes} bytes of body.`, { maxBytes }),
      );
    },
  });
}

/** Reads a declared body of at most `DRAIN_MAX_BYTES` to its end within `DRAIN_MS`; false when it did not. */
async function drainDeclaredBody(request: Request): Promise<boolean> {
  const declared = Number(request.headers.get("content-length"));
  if (request.headers.has("transfer-encoding") || !Number.isSafeInteger(declared) || declared > DRAIN_MAX_BYTES) return false;
  const body = request.body;
  if (body === null || body.locked) return false;
  const reader = body.getReader();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void reader.cancel().catch(() => undefined);
  }, DRAIN_MS);
  try {
    let read = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return !timedOut;
      read += value.byteLength;
      if (read > DRAIN_MAX_BYTES) return false;
    }
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Counts requests per client IP (and `scope`); past the limit, a 429 problem with `Retry-After`. */
export function limitRate(scope: string, rate: RateLimit, trustProxy: boolean): MiddlewareHandler {
  return rateLimiter({
    windowMs: rate.windowMs,
    limit: rate.limit,
    standardHeaders: "draft-7",
    keyGenerator: (c: Context) => `${scope}:${clientIp(c, trustProxy)}`,
    handler: (c: Context) =>
      problemResponse(
        c,
        problem(
          "rate_limited",
          `At most ${rate.limit} ${scope} requests per ${rate.windowMs / 1000} s per client; retry after the time in Retry-After.`,
        ),
      ),
  });
}
