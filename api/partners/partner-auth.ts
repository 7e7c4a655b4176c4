import type { Context } from "hono";
import type { Partner } from "./api-keys.js";

/**
 * Whose data a request may read: one partner's (a partner's key, full or read-only,
 * or an auditor key narrowed with `partnerId=`), or every partner's (an auditor key
 * without `partnerId=`, on the routes that declare `all-partners`: api/http/callers.ts).
 */
export type ReadScope = { partnerId: string } | { partnerId: undefined };

export type PartnerVariables = {
  /** Set whenever the request is about one partner (always, except an auditor reading across partners). */
  partner: Partner;
  /** What the key may do; unset behind the console's member session (a member reads its own partner). */
  keyAccess?: { kind: "partner"; scope: "full" | "read" } | { kind: "auditor" };
};

/** Whose data this request reads: the partner the key (or member session) is for, or every partner (an auditor). */
export function readScope(c: Pick<Context, "get">): ReadScope {
  const partner = c.get("partner") as Partner | undefined;
  return { partnerId: partner?.id };
}
