import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { issueTerms, relayAuthorization } from "../subscriptions/customer-authorization.js";
import type { AppEnv } from "./app-env.js";

const clientToken = z.string().min(1).max(200);
const Param = z.object({ id: z.string().max(100) });
const json = <schema extends z.ZodType>(schema: schema) => ({ required: true, content: { "application/json": { schema } } });
const address = z.string().refine((value): value is Address => isAddress(value, { strict: false }), "a 20-byte address in hex");
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "32 bytes in hex");
const typedData = z.record(z.string(), z.unknown()).openapi({ description: "EIP-712 typed data for `eth_signTypedData_v4`" });

const termsRoute = declareRoute({
  method: "post",
  path: "/{id}/terms",
  security: CALLERS.anyone,
  summary: "The exact terms the customer's wallet signs, and the EIP-2612 permit that sets the allowance (subscribe page)",
  request: { params: Param, body: json(z.object({ clientToken, subscriber: address }).strict()) },
  responses: {
    200: {
      description: "The terms, their typed data and on-chain id, and the permit to sign",
      content: {
        "application/json": {
          schema: z.object({
            terms: z.record(z.string(), z.union([z.string(), z.number()])),
            typedData,
            onchainId: z.string(),
            permit: z.object({ value: z.string(), deadline: z.string(), typedData }),
          }),
        },
      },
    },
    ...errorResponses("invalid_subscription_token", "subscription_not_awaiting_authorization", "subscriptions_unavailable"),
  },
});

const authorizeRoute = declareRoute({
  method: "post",
  path: "/{id}/authorize",
  security: CALLERS.anyone,
  summary: "The customer's signature over the issued terms (and permit): the relayer registers them on chain",
  request: {
    params: Param,
    body: json(
      z
        .object({
          clientToken,
          signature: z.string().regex(/^0x[0-9a-fA-F]{2,1000}$/, "a signature in hex"),
          permit: z
            .object({
              deadline: z.string().regex(/^[0-9]{1,30}$/),
              v: z.number().int().min(0).max(255),
              r: bytes32,
              s: bytes32,
            })
            .strict()
            .optional(),
        })
        .strict(),
    ),
  },
  responses: {
    200: {
      description: "Sent; the subscription turns `active` once the index holds its `Subscribed`",
      content: { "application/json": { schema: z.object({ transactionHash: z.string() }) } },
    },
    ...errorResponses(
      "invalid_subscription_token",
      "subscription_not_awaiting_authorization",
      "subscription_terms_not_issued",
      "subscription_bad_signature",
      "subscription_permit_expired",
      "subscription_rejected_on_chain",
      "subscriptions_unavailable",
      "relay_session_limit",
      "relay_quota_exceeded",
      "relay_budget_spent",
      "relayer_out_of_funds",
      "relay_failed",
    ),
  },
});

/** The customer's subscribe page calls these with the token from its link (`#st=`), never in a URL. */
export function publicSubscriptionRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>()
    .openapi(termsRoute, async (c) => {
      const body = c.req.valid("json");
      return c.json(
        await issueTerms(context, { id: c.req.valid("param").id, clientToken: body.clientToken, subscriber: body.subscriber }),
        200,
      );
    })
    .openapi(authorizeRoute, async (c) => {
      const body = c.req.valid("json");
      return c.json(
        await relayAuthorization(context, {
          id: c.req.valid("param").id,
          clientToken: body.clientToken,
          signature: body.signature as Hex,
          permit:
            body.permit === undefined
              ? undefined
              : { deadline: BigInt(body.permit.deadline), v: body.permit.v, r: body.permit.r as Hex, s: body.permit.s as Hex },
        }),
        200,
      );
    });
}
