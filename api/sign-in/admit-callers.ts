import type { Context } from "hono";
import type { AppContext } from "../app-context.js";
import { issuerOfWallet } from "../compliance/issuers.js";
import type { Admission, ApiKeyRole, SessionRole } from "../http/callers.js";
import { ProblemError, problem, problems } from "../http/problem.js";
import { bearerChallenge, challengeWith, REALMS } from "../http/www-authenticate.js";
import { findKeyHolder, findPartner, type KeyHolder } from "../partners/api-keys.js";
import { membershipsOf } from "../partners/members.js";
import type { PortalRole } from "../store/portal-tables.js";
import { PARTNER_CHOICE_HEADER } from "./partner-portal.js";
import { assertMayUsePortal } from "./portal-access.js";
import { findPortalSession, type PortalSession } from "./portal-sessions.js";

/** Portal session tokens start so (api/sign-in/portal-sessions.ts); every other bearer is an API key. */
const SESSION_TOKEN_PREFIX = "pst_";

/** The portal each session role belongs to. */
const PORTAL_OF: Record<SessionRole, PortalRole> = {
  investor: "investor",
  issuer: "issuer",
  admin: "admin",
  partner: "partner",
  "partner-admin": "partner",
  "issuer-as-partner": "issuer",
  "admin-books": "admin",
};

/**
 * The one place a caller is admitted against a route's declaration (api/http/callers.ts):
 * a partner's API key (full, read-only or auditor), or a portal session of the declared
 * role. It sets what the handlers read: `partner` and `keyAccess` for a key, `portalSession`
 * for a session, with `partner` and `memberRole` for a console member, `partner` for an
 * issuer acting as its partner or an admin naming one with `partnerId=`.
 */
export function callerAdmission(context: Pick<AppContext, "store" | "settings">): Admission {
  return async (c, callers) => {
    const keyRoles = callers.flatMap((requirement) => ("apiKey" in requirement ? requirement.apiKey : []));
    const sessionRoles = callers.flatMap((requirement) => ("portalSession" in requirement ? requirement.portalSession : []));
    const header = c.req.header("Authorization");
    const token = header === undefined ? undefined : /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    const viaSession =
      sessionRoles.length > 0 &&
      (keyRoles.length === 0 || (token === undefined ? isPortalPath(c.req.path) : token.startsWith(SESSION_TOKEN_PREFIX)));
    if (viaSession) return admitSession(context, c, sessionRoles, header, token);
    return admitKey(context, c, keyRoles, header, token);
  };
}

/** Without a token, which kind of credential a route admitting both asks for: the console's paths ask for a session. */
function isPortalPath(path: string): boolean {
  return path.startsWith("/api/");
}

/** Methods a read-only or auditor key may call: reading only. */
const READ_METHODS = new Set(["GET", "HEAD"]);

async function admitKey(
  context: Pick<AppContext, "store">,
  c: Context,
  roles: ApiKeyRole[],
  header: string | undefined,
  token: string | undefined,
) {
  const refuse = (detail: string, keyRefused = false) => {
    challengeWith(c, bearerChallenge(REALMS.partnerApi, keyRefused));
    return problems.unauthenticated(detail);
  };
  if (header === undefined) throw refuse("Send the partner API key as `Authorization: Bearer <API_KEY>`.");
  if (token === undefined) throw refuse("The Authorization header must be `Bearer <API_KEY>`.");
  const holder = await findKeyHolder(context.store, token);
  if (holder === undefined) throw refuse("The API key is not valid or has been revoked.", true);
  const role = keyRole(holder);
  const reading = READ_METHODS.has(c.req.method);
  // A read-only key changes only what its route admits it to change (closing a period); an auditor key never.
  const admitted = reading
    ? roles.includes(role)
    : role === "full"
      ? roles.includes("full")
      : role === "read" && roles.includes("read-change");
  // A read-only key on a change (or anything that admits only full keys) learns why, not that it is unknown.
  if (!admitted) {
    throw problem(
      "read_only_key",
      `${role === "auditor" ? "An auditor key" : "A read-only key"} may only read (GET); ${c.req.method} needs a full API key.`,
    );
  }
  const asked = c.req.query("partnerId");
  if (holder.kind === "partner") {
    // A partner's key reads its own books only: naming another partner finds nothing.
    if (asked !== undefined && asked !== holder.partner.id) throw problems.notFound(`Partner ${asked.slice(0, 100)}`);
    c.set("partner" as never, holder.partner as never);
    c.set("keyAccess" as never, { kind: "partner", scope: holder.scope } as never);
    return;
  }
  c.set("keyAccess" as never, { kind: "auditor" } as never);
  if (asked !== undefined) {
    c.set("partner" as never, (await partnerNamed(context, asked)) as never);
  } else if (!roles.includes("all-partners")) {
    throw problems.invalidRequest("An auditor key names the partner it reads: add `partnerId=<partner id>` to the query.");
  }
}

function keyRole(holder: KeyHolder): ApiKeyRole {
  if (holder.kind === "auditor") return "auditor";
  return holder.scope === "read" ? "read" : "full";
}

async function partnerNamed(context: Pick<AppContext, "store">, partnerId: string) {
  const partner = await findPartner(context.store, partnerId);
  if (partner === undefined) throw problems.notFound(`Partner ${partnerId.slice(0, 100)}`);
  return partner;
}

async function admitSession(
  context: Pick<AppContext, "store" | "settings">,
  c: Context,
  roles: SessionRole[],
  header: string | undefined,
  token: string | undefined,
) {
  const first = PORTAL_OF[roles[0] as SessionRole];
  const pathPortal = /^\/api\/(investor|issuer|admin|partner)\//.exec(c.req.path)?.[1] as PortalRole | undefined;
  // The realm of the challenge: the portal the path names, else the route's first.
  const realm = pathPortal !== undefined && roles.some((role) => PORTAL_OF[role] === pathPortal) ? pathPortal : first;
  const refuse = (detail: string, tokenRefused = false) => {
    challengeWith(c, bearerChallenge(REALMS.portal(realm), tokenRefused));
    return problems.unauthenticated(detail);
  };
  if (header === undefined) {
    throw refuse(`Sign in through /api/${realm}/auth/challenge and send \`Authorization: Bearer <token>\`.`);
  }
  if (token === undefined) throw refuse("The Authorization header must be `Bearer <token>`.");
  const session = await findPortalSession(context.store, token);
  if (session === undefined) throw refuse("The session token is not valid, has expired or was signed out.", true);
  const admitted = roles.filter((role) => PORTAL_OF[role] === session.role);
  if (admitted.length === 0) {
    throw problem("wrong_portal", `This is a session of the ${session.role} portal; this route needs a ${realm} session.`);
  }
  await assertMayUsePortal(context.store, context.settings, { role: session.role, address: session.address });
  c.set("portalSession" as never, session as never);
  if (session.role === "partner") return actAsMember(context, c, session, admitted);
  if (admitted.includes("issuer-as-partner")) {
    const issuer = await issuerOfWallet(context.store, session.address);
    const partner = await findPartner(context.store, issuer.partner_id);
    if (partner === undefined) throw problems.forbidden("This issuer has no partner.");
    c.set("partner" as never, partner as never);
  }
  if (admitted.includes("admin-books")) {
    const asked = c.req.query("partnerId");
    if (asked !== undefined) c.set("partner" as never, (await partnerNamed(context, asked)) as never);
  }
}

/**
 * A console member acts for one partner: the one named in `X-Partner-Id`, else the first
 * it joined. It then calls the very handlers a partner's key calls, as that partner.
 */
async function actAsMember(context: Pick<AppContext, "store">, c: Context, session: PortalSession, admitted: SessionRole[]) {
  const memberships = await membershipsOf(context.store, session.address);
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
  if (!admitted.includes("partner") && chosen.role !== "admin") {
    throw problems.forbidden(
      "Changing API keys, members, webhook endpoints, branding or rewards needs a member whose role is admin; ask one, or the partner's API key.",
    );
  }
  c.set("partner" as never, { id: chosen.partnerId, name: chosen.partnerName } as never);
  c.set("memberRole" as never, chosen.role as never);
}
