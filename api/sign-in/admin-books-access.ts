import { createMiddleware } from "hono/factory";
import type { AppContext } from "../app-context.js";
import { problems } from "../http/problem.js";
import { findPartner } from "../partners/api-keys.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import { requirePortalSession } from "./portal-auth.js";

/**
 * The operator's books across partners (docs/accounting.md, "The operator's books"):
 * the partner API's accounting reads (the ledger, the reports, the order reads) behind
 * an admin portal session instead of a key. It sets what a platform auditor key sets
 * (api/http/partner-auth.ts): `partner` when `partnerId=` names one (an unknown one is
 * `404 not_found`), nothing otherwise, which the handlers read as every partner's books.
 * Only read routers are mounted behind it, so nothing here can change anything.
 */
export function adminBooksAccess(context: Pick<AppContext, "store" | "settings">) {
  const scope = createMiddleware<{ Variables: PartnerVariables }>(async (c, next) => {
    const asked = c.req.query("partnerId");
    if (asked !== undefined) {
      const partner = await findPartner(context.store, asked);
      if (partner === undefined) throw problems.notFound(`Partner ${asked.slice(0, 100)}`);
      c.set("partner", partner);
    }
    await next();
  });
  // The session first: nothing about partners is looked up for a visitor without one.
  return [requirePortalSession(context, "admin"), scope] as const;
}
