import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { createPartnerKey, pageOfApiKeys, revokePartnerKey } from "../partners/partner-admin.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import type { AppEnv } from "./app-env.js";

const ScopeSchema = z.enum(["full", "read"]);

const NewKeySchema = z
  .object({
    id: z.string(),
    key: z.string().openapi({ description: "`rk_test_…` or `rk_live_…`, shown in this answer only" }),
    scope: z.literal("read"),
    createdAt: z.string(),
  })
  .openapi("NewReadOnlyKey");

const KeySchema = z
  .object({ id: z.string(), prefix: z.string(), scope: ScopeSchema, createdAt: z.string(), revokedAt: z.string().nullable() })
  .openapi("ApiKey");

const createRouteDef = declareRoute({
  method: "post",
  path: "/",
  summary: "Create a read-only key (for an accountant): every GET of the partner API, nothing else",
  description:
    'A full key may mint read-only keys only (`scope: "read"`). The key is shown in this answer only; the service keeps its SHA-256.',
  security: CALLERS.keyChange,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: z.object({ scope: z.literal("read") }).strict() } },
    },
  },
  responses: {
    201: { description: "The key", content: { "application/json": { schema: NewKeySchema } } },
    ...errorResponses("read_only_key"),
  },
});

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "The partner's API keys (prefixes and scopes only), oldest first",
  security: CALLERS.keyRead,
  request: {
    query: z.object({
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
    }),
  },
  responses: {
    200: {
      description: "A page of keys",
      content: { "application/json": { schema: z.object({ data: z.array(KeySchema), nextCursor: z.string().nullable() }) } },
    },
  },
});

const revokeRoute = declareRoute({
  method: "delete",
  path: "/{keyId}",
  summary: "Revoke a read-only key (full keys are revoked from the console or the operator CLI)",
  security: CALLERS.keyChange,
  request: { params: z.object({ keyId: z.string().min(1).max(100) }) },
  responses: { 204: { description: "Revoked" }, ...errorResponses("not_found", "read_only_key") },
});

/** `/v1/api-keys`: a partner's server mints and revokes read-only keys for its accountant (docs/accounting.md). */
export function apiKeyRoutes(context: AppContext) {
  const mode = context.settings.localMode ? ("test" as const) : ("live" as const);
  const actorOf = (partnerId: string) => ({ role: "partner" as const, address: `api_key:${partnerId}` });
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(createRouteDef, async (c) => {
      const partnerId = c.get("partner").id;
      const key = await createPartnerKey(context.store, actorOf(partnerId), { partnerId, mode, scope: "read" });
      return c.json(
        { id: key.id, key: key.apiKey, scope: "read" as const, createdAt: new Date(key.createdAt).toISOString() },
        201,
      );
    })
    .openapi(listRoute, async (c) =>
      c.json(await pageOfApiKeys(context.store, { partnerId: c.get("partner").id, ...c.req.valid("query") }), 200),
    )
    .openapi(revokeRoute, async (c) => {
      const partnerId = c.get("partner").id;
      await revokePartnerKey(context.store, actorOf(partnerId), {
        partnerId,
        keyId: c.req.valid("param").keyId,
        onlyScope: "read",
      });
      return c.body(null, 204);
    });
}
