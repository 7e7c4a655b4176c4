import { OpenAPIHono, z } from "@hono/zod-openapi";
import { getAddress } from "viem";
import type { AppContext } from "../../app-context.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { errorResponses } from "../../http/openapi-contract.js";
import { requireOwnOrigin } from "../../http/same-origin.js";
import { listTestAccounts, signInWithTestAccount } from "../../sign-in/test-accounts.js";
import type { AppEnv } from "../app-env.js";
import { signInOrigin } from "./auth-routes.js";
import { jsonResponse } from "./schemas.js";

const RoleParam = z.object({ role: z.enum(["investor", "issuer", "admin", "partner"]) });
const TestAccountSchema = z.object({
  role: z.enum(["investor", "issuer", "admin", "partner"]),
  address: z.string(),
  anvilAccountIndex: z.number().int().openapi({ description: "Index of the account in Anvil's development mnemonic" }),
});
const SessionSchema = z.object({
  token: z.string(),
  expiresAt: z.string(),
  role: z.enum(["investor", "issuer", "admin", "partner"]),
  address: z.string(),
});
const tags = ["Local mode: test accounts"];

/**
 * Local mode only (`npm start`; never mounted otherwise, so anywhere else these paths
 * are `404 not_found`): the console's "Sign in with a test account", one account per
 * role, signed in by the service itself (api/sign-in/test-accounts.ts).
 */
export function testAccountRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>()
    .openapi(
      declareRoute({
        method: "get",
        path: "/local/test-accounts",
        security: CALLERS.anyone,
        tags,
        summary: "Local mode: the test account of each console role",
        responses: {
          200: jsonResponse("The test accounts", z.object({ data: z.array(TestAccountSchema) })),
          ...errorResponses("not_found"),
        },
      }),
      (c) => c.json(listTestAccounts(context), 200),
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/{role}/auth/test-account",
        security: CALLERS.anyone,
        tags,
        summary: "Local mode: sign in with the role's test account (the service signs the EIP-4361 message)",
        request: { params: RoleParam },
        responses: {
          200: jsonResponse("A session, as from /auth/verify", SessionSchema),
          ...errorResponses(
            "not_found",
            "cross_origin_refused",
            "portal_not_allowed",
            "wallet_frozen",
            "forbidden",
            "portal_domain_not_configured",
            "rate_limited",
          ),
        },
      }),
      async (c) => {
        const { role } = c.req.valid("param");
        // A session for the asking, with no credential: only the console's own pages may ask (issue 40).
        requireOwnOrigin(
          { host: c.req.header("Host"), origin: c.req.header("Origin"), fetchSite: c.req.header("Sec-Fetch-Site") },
          context.settings.publicBaseUrl,
        );
        const { token, session } = await signInWithTestAccount(context, {
          role,
          origin: signInOrigin(c, context.settings, role),
        });
        return c.json(
          {
            token,
            expiresAt: new Date(session.expiresAt).toISOString(),
            role: session.role,
            address: getAddress(session.address),
          },
          200,
        );
      },
    );
}
