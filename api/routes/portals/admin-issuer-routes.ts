import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { disableIssuer, issuerView, listIssuers, registerIssuer } from "../../compliance/issuers.js";
import { type AdminEnv, adminRouteKit } from "./admin-route-kit.js";
import { AddressSchema, IdParam, IssuerSchema, jsonBody, jsonResponse, problemResponses } from "./schemas.js";

/** `/api/admin/issuers`: registering, listing and disabling issuer wallets. Every change is written to the audit log with the change. */
export function adminIssuerRoutes(context: AppContext) {
  const { route, actorOf } = adminRouteKit(context);
  return new OpenAPIHono<AdminEnv>()
    .openapi(
      route({
        method: "post",
        path: "/issuers",
        summary: "Register an issuer wallet (creates the issuer's partner)",
        request: { body: jsonBody(z.object({ address: AddressSchema, name: z.string().min(1).max(200) })) },
        responses: { 201: jsonResponse("The issuer", IssuerSchema), ...problemResponses },
      }),
      async (c) => c.json(issuerView(await registerIssuer(context.store, actorOf(c), c.req.valid("json"))), 201),
    )
    .openapi(
      route({
        method: "get",
        path: "/issuers",
        summary: "Every issuer",
        responses: { 200: jsonResponse("Issuers", z.object({ data: z.array(IssuerSchema) })), ...problemResponses },
      }),
      async (c) => c.json({ data: (await listIssuers(context.store)).map(issuerView) }, 200),
    )
    .openapi(
      route({
        method: "post",
        path: "/issuers/{id}/disable",
        summary: "Disable an issuer: its wallet can no longer sign in",
        request: { params: IdParam },
        responses: { 200: jsonResponse("The issuer", IssuerSchema), ...problemResponses },
      }),
      async (c) => c.json(issuerView(await disableIssuer(context.store, actorOf(c), c.req.valid("param").id)), 200),
    );
}
