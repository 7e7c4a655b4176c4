import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import {
  AuthorizationBody,
  RelayAnswerSchema,
  RelayViewSchema,
  TransferAuthorizationTypedDataSchema,
  toSubmission,
} from "../../gasless/authorization-schema.js";
import { gaslessSessionView } from "../../gasless/gasless-view.js";
import { submitAuthorization } from "../../gasless/submit-authorization.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { ownPurchase, sessionOf } from "../../purchases/purchases.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import { checksum } from "../../values/checksum-address.js";
import type { AppEnv } from "../app-env.js";
import { jsonResponse, problemResponses } from "./schemas.js";

const GaslessPurchaseSchema = z
  .object({
    purchaseId: z.string(),
    available: z.boolean().openapi({ description: "The purchase awaits payment and its network has a relayer" }),
    domain: z
      .object({ name: z.string(), version: z.string(), chainId: z.number().int(), verifyingContract: z.string() })
      .nullable()
      .openapi({ description: "The token's own EIP-712 domain to sign against (null when not available)" }),
    typedData: TransferAuthorizationTypedDataSchema.nullable().openapi({
      description:
        "What the investor's wallet signs, exactly as served: the purchase's amount from the signed-in wallet to its payment " +
        "address, valid until the reservation ends, a fresh nonce on every read (null when not available)",
    }),
    authorization: RelayViewSchema.nullable().openapi({
      description: "The latest authorization relayed for this purchase and its outcome (a failed relay shows here)",
    }),
  })
  .openapi("GaslessPurchase");

/**
 * `POST /api/rwa/settlements/authorization`: the investor pays a purchase without gas (docs/gasless.md). `GET …/{purchaseId}`
 * gives what the console signs (the typed data, over the token's own domain read by the service: the console never reads
 * the chain) and the relay's progress.
 */
export function gaslessPurchaseRoutes(context: AppContext) {
  const submit = new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    declareRoute({
      method: "post",
      path: "/authorization",
      tags: ["RWA: investor purchases"],
      summary: "Pay a purchase without gas: a signed EIP-3009 authorization from the investor's wallet",
      description:
        "As the checkout's `/authorizations`: `from` must be the signed-in investor's wallet, `to` the purchase's settlement " +
        "address, `value` its exact amount, `validBefore` at most its expiry. The service relays it; the purchase settles from the index.",
      security: CALLERS.investor,
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
        requiredPayer: checksum(address),
      });
      return c.json({ purchaseId: purchase.id, ...answer }, 200);
    },
  );
  return submit.openapi(
    declareRoute({
      method: "get",
      path: "/authorization/{purchaseId}",
      tags: ["RWA: investor purchases"],
      summary: "Whether a purchase may be paid without gas, the typed data to sign, and the relay's progress",
      security: CALLERS.investor,
      request: { params: z.object({ purchaseId: z.string().min(1).max(100) }) },
      responses: { 200: jsonResponse("The purchase's gasless payment", GaslessPurchaseSchema), ...problemResponses },
    }),
    async (c) => {
      const investor = c.get("portalSession").address;
      const purchase = await ownPurchase(context.store, investor, c.req.valid("param").purchaseId);
      const { gasless } = await gaslessSessionView(context, await sessionOf(context.store, purchase), checksum(investor));
      return c.json({ purchaseId: purchase.id, ...gasless }, 200);
    },
  );
}
