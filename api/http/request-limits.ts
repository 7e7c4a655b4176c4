import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { rateLimiter } from "hono-rate-limiter";
import { clientIp } from "./client-ip.js";
import { problem, problemResponse } from "./problem.js";

/**
 * Limits every request meets before a handler runs (docs/security.md, "Limits").
 * Rate limits count per client IP in process memory: each API replica counts on
 * its own, so behind N replicas the effective limit is N times the figure.
 */
export type RequestLimits = {
  /** Any request body, authenticated or not. */
  bodyBytes: number;
  /** Bodies of routes anyone may call without a credential (browser checkout, sign-in). */
  publicBodyBytes: number;
  /** Sign-in challenges and verifications (`/api/{portal}/auth/*`), per client IP per window. */
  signIn: RateLimit;
  /** Calls that may look a transaction up over RPC (hash submissions, authorizations), per client IP per window. */
  lookups: RateLimit;
  /** Every other public browser call (`/v1/public/*`), per client IP per window. */
  publicCalls: RateLimit;
  trustProxy: boolean;
};

export type RateLimit = { limit: number; windowMs: number };

/**
 * Refuses a body over `maxBytes` with a 413 problem, before anything reads it:
 * a declared `Content-Length` is refused at once, a chunked body as soon as it
 * passes the limit (it is never buffered beyond it). The rest of the body is never
 * read, so the connection cannot carry another request: the answer says
 * `Connection: close`, and the server drops the connection after it. A client that
 * kept it in its keep-alive pool would otherwise send its next request into a
 * connection being torn down and see a reset.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => {
      c.header("Connection", "close");
      return problemResponse(
        c,
        problem("payload_too_large", `This route takes at most ${maxBytes} bytes of body.`, { maxBytes }),
      );
    },
  });
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
