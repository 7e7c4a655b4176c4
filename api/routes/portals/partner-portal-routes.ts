import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { apiKeyModeFor } from "../../partners/api-keys.js";
import { createPartnerKey, pageOfApiKeys, partnerDetails, revokePartnerKey } from "../../partners/partner-admin.js";
import type { MemberVariables } from "../../sign-in/partner-portal.js";
import type { AppEnv } from "../app-env.js";
import { jsonResponse, PageQuery, problemResponses } from "./schemas.js";

const KeySchema = z.object({
  id: z.string(),
  prefix: z.string(),
  scope: z.enum(["full", "read"]).openapi({ description: "`read`: a read-only key (`rk_…`), GETs only" }),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});

/**
 * `/api/partner/api-keys` and `/api/partner/profile`: what only the console's partner
 * portal offers (the API key itself cannot mint keys). Mounted behind the member guard.
 */
export function partnerPortalRoutes(context: AppContext) {
  const tags = ["Partner portal"];
  const keyMode = apiKeyModeFor({ localMode: context.settings.localMode, networks: context.networks });
  return new OpenAPIHono<AppEnv & { Variables: MemberVariables }>()
    .openapi(
      declareRoute({
        method: "get",
        path: "/profile",
        security: CALLERS.member,
        tags,
        summary: "The partner this member acts for, with key prefixes and payment addresses",
        responses: {
          200: jsonResponse(
            "The partner",
            z.object({
              id: z.string(),
              name: z.string(),
              issuerId: z.string().nullable(),
              createdAt: z.string(),
              memberRole: z.enum(["admin", "member"]).openapi({
                description: "The signed-in member's role: only an admin changes keys, members, webhook endpoints and branding",
              }),
              apiKeys: z.array(
                z.object({ id: z.string(), prefix: z.string(), createdAt: z.string(), revokedAt: z.string().nullable() }),
              ),
              paymentAddresses: z.array(
                z.object({
                  id: z.string(),
                  network: z.string(),
                  chainId: z.number().int(),
                  address: z.string(),
                  watching: z.boolean().openapi({
                    description:
                      "false until an indexer whose build watches this address serves the index (a restart on one machine, a new build schema in a fleet)",
                  }),
                }),
              ),
            }),
          ),
          ...problemResponses,
        },
      }),
      async (c) =>
        c.json(
          {
            ...(await partnerDetails(context.store, c.get("partner").id, context.settings.indexSchema)),
            memberRole: c.get("memberRole"),
          },
          200,
        ),
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/api-keys",
        security: CALLERS.member,
        tags,
        summary: "The partner's API keys (prefixes only), oldest first",
        request: { query: PageQuery },
        responses: {
          200: jsonResponse("Keys", z.object({ data: z.array(KeySchema), nextCursor: z.string().nullable() })),
          ...problemResponses,
        },
      }),
      async (c) => c.json(await pageOfApiKeys(context.store, { partnerId: c.get("partner").id, ...c.req.valid("query") }), 200),
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/api-keys",
        security: CALLERS.memberAdmin,
        tags,
        summary: "Issue an API key (the key is shown in this answer only)",
        description: '`scope: "read"` issues a read-only key (`rk_…`) for an accountant: every GET, nothing else.',
        request: {
          body: {
            required: false,
            content: { "application/json": { schema: z.object({ scope: z.enum(["full", "read"]).default("full") }).strict() } },
          },
        },
        responses: {
          201: jsonResponse("The key", z.object({ id: z.string(), apiKey: z.string(), scope: z.enum(["full", "read"]) })),
          ...problemResponses,
        },
      }),
      async (c) => {
        const actor = { role: "partner" as const, address: c.get("portalSession").address };
        const scope = (c.req.valid("json") as { scope?: "full" | "read" } | undefined)?.scope ?? "full";
        const key = await createPartnerKey(context.store, actor, { partnerId: c.get("partner").id, mode: keyMode, scope });
        return c.json({ id: key.id, apiKey: key.apiKey, scope: key.scope }, 201);
      },
    )
    .openapi(
      declareRoute({
        method: "delete",
        path: "/api-keys/{keyId}",
        security: CALLERS.memberAdmin,
        tags,
        summary: "Revoke an API key",
        request: { params: z.object({ keyId: z.string().min(1).max(100) }) },
        responses: { 204: { description: "Revoked" }, ...problemResponses },
      }),
      async (c) => {
        const actor = { role: "partner" as const, address: c.get("portalSession").address };
        await revokePartnerKey(context.store, actor, { partnerId: c.get("partner").id, keyId: c.req.valid("param").keyId });
        return c.body(null, 204);
      },
    );
}
