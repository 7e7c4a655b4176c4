import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";

/**
 * The client address: the socket's peer (as @hono/node-server, which Ponder's API
 * server runs on, reports it), or the first X-Forwarded-For entry behind a trusted
 * proxy. A request that did not come through a socket (`app.request` in-process)
 * has no address: "unknown".
 */
export function clientIp(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = c.req.header("X-Forwarded-For")?.split(",")[0]?.trim();
    if (forwarded) return forwarded;
  }
  if ((c.env as { incoming?: unknown } | undefined)?.incoming === undefined) return "unknown";
  return getConnInfo(c).remote.address ?? "unknown";
}
