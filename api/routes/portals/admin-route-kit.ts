import type { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppContext } from "../../app-context.js";
import type { PortalActor } from "../../audit/audit-log.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { apiKeyModeFor } from "../../partners/api-keys.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";

export type AdminEnv = AppEnv & { Variables: PortalVariables };

/** What every admin route shares: the admin session it needs, its tag, and the actor the audit log records. */
export function adminRouteKit(context: AppContext) {
  const tags = ["Admin portal"];
  const actorOf = (c: Context<AdminEnv>): PortalActor => ({ role: "admin", address: c.get("portalSession").address });
  const keyMode = apiKeyModeFor({ localMode: context.settings.localMode, networks: context.networks });
  const route = <config extends Parameters<typeof createRoute>[0]>(config: config) =>
    declareRoute({ ...config, tags, security: CALLERS.admin });
  return { route, actorOf, keyMode };
}
