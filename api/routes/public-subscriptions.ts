import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import {
  customerSubscriptionView,
  issueTerms,
  relayAuthorization,
  relayCustomerCancel,
} from "../subscriptions/customer-authorization.js";
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

const PublicSubscriptionSchema = z
  .object({
    id: z.string(),
    status: z.string(),
    productName: z.string(),
    amount: z.string(),
    decimals: z.literal(6),
    interval: z.string(),
    periodSeconds: z.number().int(),
    network: z.string().nullable(),
    chainId: z.number().int(),
    payee: z.string(),
    subscriber: z.string().nullable(),
    onchainId: z.string().nullable(),
    authorizationTransactionHash: z
      .string()
      .nullable()
      .openapi({ description: "The registration the relayer sent, while it awaits the index" }),
    endAt: z.string().nullable(),
    nextChargeAt: z.string().nullable(),
    cancelAtPeriodEnd: z.boolean(),
    cancelledBy: z.string().nullable(),
    cancelledAt: z.string().nullable(),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    shop: z.object({
      displayName: z.string(),
      logoUrl: z.string().nullable(),
      accentColor: z.string().nullable(),
      supportUrl: z.string().nullable(),
      supportEmail: z.string().nullable(),
    }),
    charges: z.array(
      z.object({
        id: z.string(),
        periodIndex: z.number().int(),
        amount: z.string(),
        status: z.string(),
        transactionHash: z.string().nullable(),
        failureReason: z.string().nullable(),
        nextRetryAt: z.string().nullable(),
        paidAt: z.string().nullable(),
      }),
    ),
    cancel: z
      .object({ typedData })
      .nullable()
      .openapi({ description: "While the customer may cancel: the `Cancel` typed data the subscriber's wallet signs" }),
  })
  .openapi("PublicSubscription");

const validateRoute = declareRoute({
  method: "post",
  path: "/{id}/validate",
  security: CALLERS.anyone,
  summary: "The subscription as its customer may see it (subscribe and subscription pages)",
  request: { params: Param, body: json(z.object({ clientToken }).strict()) },
  responses: {
    200: { description: "The subscription", content: { "application/json": { schema: PublicSubscriptionSchema } } },
    ...errorResponses("invalid_subscription_token"),
  },
});

const cancelRoute = declareRoute({
  method: "post",
  path: "/{id}/cancel",
  security: CALLERS.anyone,
  summary: "The subscriber's signed cancel: the relayer sends `cancelWithSignature` (subscription page, no ETH needed)",
  request: {
    params: Param,
    body: json(z.object({ clientToken, signature: z.string().regex(/^0x[0-9a-fA-F]{2,1000}$/, "a signature in hex") }).strict()),
  },
  responses: {
    200: {
      description: "Sent; the subscription turns `cancelled` once the index holds its `Cancelled`",
      content: { "application/json": { schema: z.object({ transactionHash: z.string() }) } },
    },
    ...errorResponses(
      "invalid_subscription_token",
      "subscription_not_cancellable",
      "subscription_cancel_bad_signature",
      "subscription_cancel_rejected_on_chain",
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
    .openapi(validateRoute, async (c) =>
      c.json(
        await customerSubscriptionView(context, { id: c.req.valid("param").id, clientToken: c.req.valid("json").clientToken }),
        200,
      ),
    )
    .openapi(cancelRoute, async (c) => {
      const body = c.req.valid("json");
      return c.json(
        await relayCustomerCancel(context, {
          id: c.req.valid("param").id,
          clientToken: body.clientToken,
          signature: body.signature as Hex,
        }),
        200,
      );
    })
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
