import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import {
  addPartnerPaymentAddress,
  createPartnerKey,
  createPartnerWithKey,
  pageOfPartners,
  partnerDetails,
  revokePartnerKey,
} from "../../partners/partner-admin.js";
import { type AdminEnv, adminRouteKit } from "./admin-route-kit.js";
import { AddressSchema, IdParam, jsonBody, jsonResponse, PageQuery, problemResponses } from "./schemas.js";

const PaymentAddressSchema = z.object({
  id: z.string(),
  network: z.string(),
  chainId: z.number().int(),
  address: z.string(),
  watching: z.boolean().openapi({
    description:
      "False until an indexer whose build watches this address serves the index (a restart on one machine, a new build schema in a fleet)",
  }),
});
const PartnerSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    issuerId: z.string().nullable(),
    createdAt: z.string(),
    apiKeys: z.array(z.object({ id: z.string(), prefix: z.string(), createdAt: z.string(), revokedAt: z.string().nullable() })),
    paymentAddresses: z.array(PaymentAddressSchema),
  })
  .openapi("Partner");
const NewKeySchema = z.object({
  id: z.string(),
  apiKey: z.string().openapi({ description: "Shown only in this answer; store it in the partner's server" }),
});

/** `/api/admin/partners`: commerce partners, their API keys and payment addresses. Every change is written to the audit log with the change. */
export function adminPartnerRoutes(context: AppContext) {
  const { route, actorOf, keyMode } = adminRouteKit(context);
  return new OpenAPIHono<AdminEnv>()
    .openapi(
      route({
        method: "post",
        path: "/partners",
        summary: "Create a commerce partner and its first API key (shown once)",
        request: { body: jsonBody(z.object({ name: z.string().min(1).max(200) })) },
        responses: {
          201: jsonResponse("The partner and its key", z.object({ partner: PartnerSchema, apiKey: NewKeySchema })),
          ...problemResponses,
        },
      }),
      async (c) => {
        const { partner, key } = await createPartnerWithKey(context.store, actorOf(c), {
          name: c.req.valid("json").name,
          mode: keyMode,
        });
        return c.json(
          {
            partner: await partnerDetails(context.store, partner.id, context.settings.indexSchema),
            apiKey: { id: key.id, apiKey: key.apiKey },
          },
          201,
        );
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/partners",
        summary: "Partners with key prefixes and payment addresses",
        request: { query: PageQuery },
        responses: {
          200: jsonResponse("A page of partners", z.object({ data: z.array(PartnerSchema), nextCursor: z.string().nullable() })),
          ...problemResponses,
        },
      }),
      async (c) => {
        const query = c.req.valid("query");
        return c.json(
          await pageOfPartners(context.store, {
            cursor: query.cursor,
            limit: query.limit,
            indexSchema: context.settings.indexSchema,
          }),
          200,
        );
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/partners/{id}",
        summary: "One partner",
        request: { params: IdParam },
        responses: { 200: jsonResponse("The partner", PartnerSchema), ...problemResponses },
      }),
      async (c) => c.json(await partnerDetails(context.store, c.req.valid("param").id, context.settings.indexSchema), 200),
    )
    .openapi(
      route({
        method: "post",
        path: "/partners/{id}/api-keys",
        summary: "Issue another API key (shown once)",
        request: { params: IdParam },
        responses: { 201: jsonResponse("The key", NewKeySchema), ...problemResponses },
      }),
      async (c) => {
        const key = await createPartnerKey(context.store, actorOf(c), { partnerId: c.req.valid("param").id, mode: keyMode });
        return c.json({ id: key.id, apiKey: key.apiKey }, 201);
      },
    )
    .openapi(
      route({
        method: "delete",
        path: "/partners/{id}/api-keys/{keyId}",
        summary: "Revoke an API key",
        request: { params: z.object({ id: z.string().min(1).max(100), keyId: z.string().min(1).max(100) }) },
        responses: { 204: { description: "Revoked" }, ...problemResponses },
      }),
      async (c) => {
        const { id, keyId } = c.req.valid("param");
        await revokePartnerKey(context.store, actorOf(c), { partnerId: id, keyId });
        return c.body(null, 204);
      },
    )
    .openapi(
      route({
        method: "post",
        path: "/partners/{id}/payment-addresses",
        summary: "Give a partner a payment address (watched once the indexer restarts with it)",
        request: { params: IdParam, body: jsonBody(z.object({ network: z.string().min(1).max(40), address: AddressSchema })) },
        responses: { 201: jsonResponse("The payment address", PaymentAddressSchema), ...problemResponses },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const added = await addPartnerPaymentAddress(context, actorOf(c), { partnerId: c.req.valid("param").id, ...body });
        return c.json(added, 201);
      },
    );
}
