import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { requestHash } from "../checkout/idempotency.js";
import { NETWORK_NAMES } from "../config/networks.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import {
  MIN_CUSTOM_PERIOD_SECONDS,
  NAMED_INTERVALS,
  type NamedInterval,
  RETRY_SCHEDULE_LIMITS,
} from "../subscriptions/subscription-rules.js";
import { subscriptionSettingsOf, writeSubscriptionSettings } from "../subscriptions/subscription-settings.js";
import {
  cancelSubscription,
  createSubscription,
  listSubscriptions,
  partnerSubscription,
  viewSubscription,
} from "../subscriptions/subscriptions.js";
import type { AppEnv } from "./app-env.js";

const SUBSCRIPTION_STATUSES = ["awaiting_authorization", "active", "past_due", "cancelled", "ended", "expired"] as const;
const amount = z.string().regex(/^[1-9][0-9]{0,29}$/, "a positive whole number of USDC base units, as a decimal string");
const instant = z.string().datetime({ offset: true });

export const SubscriptionChargeSchema = z
  .object({
    id: z.string(),
    subscriptionId: z.string(),
    periodIndex: z.number().int(),
    amount: z.string(),
    status: z.enum(["due", "pending", "paid", "failed"]),
    orderId: z.string().nullable(),
    transactionHash: z.string().nullable(),
    failureReason: z.string().nullable(),
    nextRetryAt: z.string().nullable(),
    attempts: z.number().int(),
    paidAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("SubscriptionCharge");

export const SubscriptionSchema = z
  .object({
    id: z.string(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    externalCustomerId: z.string(),
    productName: z.string(),
    amount: z.string(),
    interval: z.string().openapi({ description: "`day`, `week`, `month` (30 days), `year` (365 days) or `custom`" }),
    periodSeconds: z.number().int(),
    chainId: z.number().int(),
    token: z.string(),
    manager: z.string().openapi({ description: "The subscription manager contract" }),
    payee: z.string().openapi({ description: "Your payment address every charge goes to" }),
    subscriber: z.string().nullable(),
    onchainId: z.string().nullable().openapi({ description: "The terms' EIP-712 hash, once terms were issued" }),
    startAt: z.string().nullable(),
    endAt: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    url: z.string().nullable().openapi({
      description:
        "`<PUBLIC_BASE_URL>/subscribe/<id>#st=<clientToken>`: send your customer there to authorise it. Shown when created (a replay shows a new link; the older one stops working); null elsewhere.",
    }),
    customerUrl: z.string().nullable().openapi({
      description:
        "`<PUBLIC_BASE_URL>/subscription/<id>#st=<clientToken>`: the customer's page. Shown when created; null elsewhere.",
    }),
    clientToken: z.string().nullable(),
    nextChargeAt: z.string().nullable(),
    cancelAtPeriodEnd: z.boolean(),
    cancelledBy: z.enum(["customer", "partner", "retries_exhausted"]).nullable(),
    cancelledAt: z.string().nullable(),
    activatedAt: z.string().nullable(),
    endedAt: z.string().nullable(),
    expiresAt: z.string(),
    createdAt: z.string(),
    charges: z.array(SubscriptionChargeSchema),
  })
  .openapi("Subscription");

const CreateBody = z
  .object({
    externalCustomerId: z.string().min(1).max(200),
    productName: z.string().min(1).max(200),
    amount,
    interval: z.union([
      z.enum(Object.keys(NAMED_INTERVALS) as [NamedInterval, ...NamedInterval[]]),
      z
        .object({
          seconds: z
            .number()
            .int()
            .min(MIN_CUSTOM_PERIOD_SECONDS)
            .max(10 * 365 * 86_400),
        })
        .strict(),
    ]),
    network: z.enum(NETWORK_NAMES).optional(),
    startAt: instant.optional(),
    endAt: instant.optional(),
    metadata: z.record(z.string(), z.string().max(500)).optional(),
    successUrl: z.string().url().max(2000).optional(),
    cancelUrl: z.string().url().max(2000).optional(),
    idempotencyKey: z.string().min(1).max(200),
  })
  .strict();

const Param = z.object({ id: z.string().max(100) });

const createRoute_ = declareRoute({
  method: "post",
  path: "/",
  summary: "Create a subscription the customer authorises once from any wallet (SPEC 18)",
  security: CALLERS.partnerChange,
  request: { body: { required: true, content: { "application/json": { schema: CreateBody } } } },
  responses: {
    201: { description: "Created, awaiting the customer", content: { "application/json": { schema: SubscriptionSchema } } },
    200: {
      description: "The subscription this idempotency key created (with a new client token)",
      content: { "application/json": { schema: SubscriptionSchema } },
    },
    ...errorResponses("idempotency_conflict", "no_payment_address", "subscriptions_unavailable"),
  },
});

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "Your subscriptions, newest first",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      status: z.enum(SUBSCRIPTION_STATUSES).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: {
    200: {
      description: "A page of subscriptions",
      content: {
        "application/json": { schema: z.object({ data: z.array(SubscriptionSchema), nextCursor: z.string().nullable() }) },
      },
    },
  },
});

const readRoute = declareRoute({
  method: "get",
  path: "/{id}",
  summary: "One of your subscriptions, with its charges",
  security: CALLERS.partnerRead,
  request: { params: Param },
  responses: {
    200: { description: "The subscription", content: { "application/json": { schema: SubscriptionSchema } } },
    ...errorResponses("not_found"),
  },
});

const cancelRoute = declareRoute({
  method: "post",
  path: "/{id}/cancel",
  summary:
    "Stop charging (off chain: the customer's signed terms stay registered); `atPeriodEnd` keeps it active until the period paid for ends",
  security: CALLERS.partnerChange,
  request: {
    params: Param,
    body: {
      required: false,
      content: { "application/json": { schema: z.object({ atPeriodEnd: z.boolean().default(false) }).strict() } },
    },
  },
  responses: {
    200: { description: "Cancelled (again: the same answer)", content: { "application/json": { schema: SubscriptionSchema } } },
    ...errorResponses("not_found", "subscription_not_cancellable"),
  },
});

const SubscriptionSettingsSchema = z
  .object({
    retryDelaysSeconds: z
      .array(z.number().int().min(RETRY_SCHEDULE_LIMITS.minDelaySeconds).max(RETRY_SCHEDULE_LIMITS.maxDelaySeconds))
      .max(RETRY_SCHEDULE_LIMITS.maxRetries)
      .openapi({
        description:
          "Seconds of chain time after a failed charge before each retry (default [3600, 21600, 86400, 259200]); after the last, the subscription is cancelled (`retries_exhausted`)",
        example: [3_600, 21_600, 86_400, 259_200],
      }),
  })
  .strict()
  .openapi("SubscriptionSettings");

const settingsReadRoute = declareRoute({
  method: "get",
  path: "/settings",
  summary: "Your subscription settings: the retry schedule of failed charges",
  security: CALLERS.partnerRead,
  responses: {
    200: { description: "The settings", content: { "application/json": { schema: SubscriptionSettingsSchema } } },
  },
});

const settingsWriteRoute = declareRoute({
  method: "put",
  path: "/settings",
  summary: "Set the retry schedule of failed charges (a charge that failed already keeps its retry time)",
  security: CALLERS.partnerAdminChange,
  request: { body: { required: true, content: { "application/json": { schema: SubscriptionSettingsSchema } } } },
  responses: {
    200: { description: "The settings", content: { "application/json": { schema: SubscriptionSettingsSchema } } },
    ...errorResponses("invalid_request"),
  },
});

/** The partner's subscriptions (`/v1/subscriptions`, and `/api/partner/subscriptions` for the console). */
export function subscriptionRoutes(context: AppContext) {
  return (
    new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
      .openapi(createRoute_, async (c) => {
        const body = c.req.valid("json");
        const created = await createSubscription(context, {
          partnerId: c.get("partner").id,
          externalCustomerId: body.externalCustomerId,
          productName: body.productName,
          amount: BigInt(body.amount),
          interval: body.interval,
          network: body.network,
          startAt: body.startAt === undefined ? undefined : Date.parse(body.startAt),
          endAt: body.endAt === undefined ? undefined : Date.parse(body.endAt),
          metadata: body.metadata,
          successUrl: body.successUrl,
          cancelUrl: body.cancelUrl,
          idempotencyKey: body.idempotencyKey,
          requestHash: requestHash(body),
        });
        const baseUrl = context.settings.publicBaseUrl ?? new URL(c.req.url).origin;
        const view = await viewSubscription(context.store, created.subscription, { baseUrl, clientToken: created.clientToken });
        return c.json(view, created.replayed ? 200 : 201);
      })
      // Before `/{id}`: `settings` is no subscription id.
      .openapi(settingsReadRoute, async (c) => c.json(await subscriptionSettingsOf(context.store, c.get("partner").id), 200))
      .openapi(settingsWriteRoute, async (c) => {
        const partnerId = c.get("partner").id;
        await writeSubscriptionSettings(context.store, {
          partnerId,
          retryDelaysSeconds: c.req.valid("json").retryDelaysSeconds,
          now: Date.now(),
        });
        return c.json(await subscriptionSettingsOf(context.store, partnerId), 200);
      })
      .openapi(listRoute, async (c) =>
        c.json(await listSubscriptions(context.store, { ...c.req.valid("query"), partnerId: c.get("partner").id }), 200),
      )
      .openapi(readRoute, async (c) => {
        const subscription = await partnerSubscription(context.store, {
          partnerId: c.get("partner").id,
          id: c.req.valid("param").id,
        });
        return c.json(await viewSubscription(context.store, subscription), 200);
      })
      .openapi(cancelRoute, async (c) => {
        const body = c.req.header("content-type")?.includes("application/json") ? c.req.valid("json") : undefined;
        const subscription = await cancelSubscription(context, {
          partnerId: c.get("partner").id,
          id: c.req.valid("param").id,
          atPeriodEnd: body?.atPeriodEnd ?? false,
        });
        return c.json(await viewSubscription(context.store, subscription), 200);
      })
  );
}
