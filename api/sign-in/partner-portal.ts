import { createMiddleware } from "hono/factory";
import type { AppContext } from "../app-context.js";
import { ProblemError, problems } from "../http/problem.js";
import { membershipsOf } from "../partners/members.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import type { PartnerMemberRole } from "../store/member-tables.js";
import { type PortalVariables, requirePortalSession } from "./portal-auth.js";

export const PARTNER_CHOICE_HEADER = "X-Partner-Id";

/**
 * The partner portal's guard: a `partner` portal session whose wallet is a member
 * of the partner it acts for. It sets the same `partner` variable the API-key guard
 * sets, so `/api/partner/...` runs the very route handlers (and domain functions) of
 * `/v1/...`: a member wallet can do what the partner's API key can, nothing more and
 * never through a second path to the store. A wallet that belongs to several partners
 * names one in `X-Partner-Id`; without it, the first partner it joined.
 */
/** The member's role for the partner it acts for (`admin` or `member`), set beside `partner`. */
export type MemberVariables = PortalVariables & PartnerVariables & { memberRole: PartnerMemberRole };

export function requirePartnerMember(context: Pick<AppContext, "store" | "settings">) {
  const session = requirePortalSession(context, "partner");
  return createMiddleware<{ Variables: MemberVariables }>(async (c, next) => {
    // biome-ignore lint/suspicious/noExplicitAny: the session guard sets a subset of these variables
    await session(c as any, async () => {
      const memberships = await membershipsOf(context.store, c.get("portalSession").address);
      const wanted = c.req.header(PARTNER_CHOICE_HEADER);
      const chosen = wanted === undefined ? memberships[0] : memberships.find((m) => m.partnerId === wanted);
      if (chosen === undefined) {
        throw new ProblemError({
          code: "portal_not_allowed",
          title: "This wallet cannot act for this partner",
          detail: "The wallet is not a member of the partner named in X-Partner-Id.",
          extensions: { portal: "partner" },
        });
      }
      c.set("partner", { id: chosen.partnerId, name: chosen.partnerName });
      c.set("memberRole", chosen.role);
      await next();
    });
  });
}

/**
 * Who may change who can act for the partner, and where its events go: a change of
 * API keys, members, webhook endpoints or branding needs a member whose role is
 * `admin`. A `member` reads all of it and does the daily work (sessions, orders,
 * payments, events, a test event to an endpoint). Reads pass; a change by a
 * `member` is `403 forbidden` and changes nothing. Runs after `requirePartnerMember`.
 */
export const requireAdminMemberToChange = createMiddleware<{ Variables: MemberVariables }>(async (c, next) => {
  const reading = c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS";
  const testEvent = c.req.method === "POST" && /\/webhook-endpoints\/[^/]+\/test$/.test(c.req.path);
  if (!reading && !testEvent && c.get("memberRole") !== "admin") {
    throw problems.forbidden(
      "Changing API keys, members, webhook endpoints or branding needs a member whose role is admin; ask one, or the partner's API key.",
    );
  }
  await next();
});
