import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Address } from "viem";
import type { AppContext } from "../../app-context.js";
import { AuthorizationBody, RelayAnswerSchema, toSubmission } from "../../gasless/authorization-schema.js";
import { submitAuthorization } from "../../gasless/submit-authorization.js";
import type { AppEnv } from "../../routes/app-env.js";
import { type PortalVariables, requirePortalSession } from "../portal-auth.js";
import { ownPurchase, sessionOf } from "../purchases.js";
import { jsonResponse, problemResponses } from "./schemas.js";

/** `POST /api/rwa/settlements/authorization`: the investor pays a purchase without gas (SPEC section 14). */
export function gaslessPurchaseRoutes(context: AppContext) {
  const investor = requirePortalSession(context, "investor");
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    createRoute({
      method: "post",
      path: "/authorization",
      tags: ["RWA: investor purchases"],
      summary: "Pay a purchase without gas: a signed EIP-3009 authorization from the investor's wallet",
      description:
        "As the checkout's `/authorizations`: `from` must be the signed-in investor's wallet, `to` the purchase's settlement " +
        "address, `value` its exact amount, `validBefore` at most its expiry. The service relays it; the purchase settles from the index.",
      security: [{ portalSession: [] }],
      middleware: [investor] as const,
      request: {
        body: {
          required: true,
          content: { "application/json": { schema: AuthorizationBody.extend({ purchaseId: z.string().min(1).max(100) }) } },
        },
      },
      responses: { 200: jsonResponse("Submitted", RelayAnswerSchema), ...problemResponses },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const address = c.get("portalSession").address;
      const purchase = await ownPurchase(context.store, address, body.purchaseId);
      const session = await sessionOf(context.store, purchase);
      const answer = await submitAuthorization(context, {
        session,
        submission: toSubmission(body),
        requiredPayer: address as Address,
      });
      return c.json({ purchaseId: purchase.id, ...answer }, 200);
    },
  );
}
