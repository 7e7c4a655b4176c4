import { createMiddleware } from "hono/factory";
import type { AppContext } from "../app-context.js";
import { problem, problems } from "../http/problem.js";
import { bearerChallenge, challengeWith, REALMS } from "../http/www-authenticate.js";
import type { PortalRole } from "../store/portal-tables.js";
import { assertMayUsePortal } from "./portal-access.js";
import { findPortalSession, type PortalSession } from "./portal-sessions.js";

export type PortalVariables = { portalSession: PortalSession };

/**
 * `Authorization: Bearer <token>` from `/api/<role>/auth/verify`. A session only
 * opens the portal it was issued for, and the wallet must still be allowed there
 * (an admin removed from ADMIN_ADDRESSES or a disabled issuer loses access at once).
 */
export function requirePortalSession(context: Pick<AppContext, "store" | "settings">, role: PortalRole) {
  return createMiddleware<{ Variables: PortalVariables }>(async (c, next) => {
    const refuse = (detail: string, tokenRefused = false) => {
      challengeWith(c, bearerChallenge(REALMS.portal(role), tokenRefused));
      return problems.unauthenticated(detail);
    };
    const header = c.req.header("Authorization");
    if (header === undefined) {
      throw refuse(`Sign in through /api/${role}/auth/challenge and send \`Authorization: Bearer <token>\`.`);
    }
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) throw refuse("The Authorization header must be `Bearer <token>`.");
    const session = await findPortalSession(context.store, match[1] as string);
    if (session === undefined) throw refuse("The session token is not valid, has expired or was signed out.", true);
    if (session.role !== role) {
      throw problem("wrong_portal", `This is a session of the ${session.role} portal; this route needs a ${role} session.`);
    }
    await assertMayUsePortal(context.store, context.settings, { role, address: session.address });
    c.set("portalSession", session);
    await next();
  });
}
