import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

/** The client address: the socket's peer, or the first X-Forwarded-For entry behind a trusted proxy. */
export function clientIp(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = c.req.header("X-Forwarded-For")?.split(",")[0]?.trim();
    if (forwarded) return forwarded;
  }
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress ?? "unknown";
}
