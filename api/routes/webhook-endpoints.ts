import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { EVENT_TYPES } from "../outbox/event-types.js";
import { ALL_EVENTS } from "../outbox/subscription.js";
import { sendTestEvent } from "../outbox/test-event.js";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  rotateWebhookSecret,
} from "../outbox/webhook-endpoints.js";
import { MAX_WEBHOOK_URL_LENGTH } from "../outbox/webhook-url.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import type { AppEnv } from "./app-env.js";

const EventTypeOrAll = z.enum([ALL_EVENTS, ...EVENT_TYPES]);

const WebhookEndpointSchema = z
  .object({
    id: z.string().openapi({ example: "we_0f8c..." }),
    url: z.string(),
    events: z.array(EventTypeOrAll).openapi({ description: '`["*"]`: every type, including types added later' }),
    createdAt: z.string().openapi({ description: "ISO 8601" }),
    previousSecretExpiresAt: z
      .string()
      .nullable()
      .openapi({ description: "While a secret rotation is in progress: when the previous secret stops signing" }),
  })
  .openapi("WebhookEndpoint");

const CreateBody = z
  .object({
    url: z.string().max(MAX_WEBHOOK_URL_LENGTH).openapi({ example: "https://shop.example/webhooks/settlement" }),
    events: z
      .array(EventTypeOrAll)
      .min(1)
      .max(EVENT_TYPES.length + 1)
      .optional()
      .openapi({ description: 'Event types to receive; omitted or `["*"]`: all types' }),
  })
  .openapi("CreateWebhookEndpoint");

const IdParams = z.object({ id: z.string().max(100) });

const createRouteDef = declareRoute({
  method: "post",
  path: "/",
  summary: "Register a webhook endpoint",
  description:
    "The URL must be https (http only in local mode) and must not point at a private, loopback, link-local or reserved address, " +
    "directly or through DNS. The signing secret is shown only in this answer. The endpoint receives events recorded from now on.",
  security: CALLERS.partnerAdminChange,
  request: { body: { content: { "application/json": { schema: CreateBody } }, required: true } },
  responses: {
    201: {
      description: "Created",
      content: {
        "application/json": { schema: WebhookEndpointSchema.extend({ secret: z.string().openapi({ example: "whsec_..." }) }) },
      },
    },
    ...errorResponses("invalid_webhook_url", "invalid_request", "too_many_webhook_endpoints"),
  },
});

const listRouteDef = declareRoute({
  method: "get",
  path: "/",
  summary: "List webhook endpoints (without secrets)",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(100).default(100),
    }),
  },
  responses: {
    200: {
      description: "A page of endpoints",
      content: {
        "application/json": { schema: z.object({ data: z.array(WebhookEndpointSchema), nextCursor: z.string().nullable() }) },
      },
    },
  },
});

const getRouteDef = declareRoute({
  method: "get",
  path: "/{id}",
  summary: "Read a webhook endpoint (without its secret)",
  security: CALLERS.partnerRead,
  request: { params: IdParams },
  responses: {
    200: { description: "The endpoint", content: { "application/json": { schema: WebhookEndpointSchema } } },
    ...errorResponses("not_found"),
  },
});

const deleteRouteDef = declareRoute({
  method: "delete",
  path: "/{id}",
  summary: "Delete a webhook endpoint",
  description: "Deliveries to it that were not made yet are cancelled.",
  security: CALLERS.partnerAdminChange,
  request: { params: IdParams },
  responses: {
    200: {
      description: "Deleted",
      content: { "application/json": { schema: z.object({ id: z.string(), deleted: z.literal(true) }) } },
    },
    ...errorResponses("not_found"),
  },
});

const rotateRouteDef = declareRoute({
  method: "post",
  path: "/{id}/rotate-secret",
  summary: "Rotate the signing secret",
  description:
    "Returns the new secret (shown only here). Until `previousSecretExpiresAt` (default 24 h) every delivery carries two `v1=` " +
    "signatures, one per secret, so a receiver can switch at its own pace.",
  security: CALLERS.partnerAdminChange,
  request: {
    params: IdParams,
    body: {
      content: {
        "application/json": {
          schema: z.object({
            previousSecretExpiresInSeconds: z
              .number()
              .int()
              .min(0)
              .max(7 * 24 * 60 * 60)
              .optional()
              .openapi({ description: "How long the old secret keeps signing; default 86400, 0 retires it at once" }),
          }),
        },
      },
      required: false,
    },
  },
  responses: {
    200: {
      description: "Rotated",
      content: {
        "application/json": {
          schema: z.object({ id: z.string(), secret: z.string(), previousSecretExpiresAt: z.string() }),
        },
      },
    },
    ...errorResponses("not_found", "concurrent_rotation"),
  },
});

const testRouteDef = declareRoute({
  method: "post",
  path: "/{id}/test",
  summary: "Send a test event to this endpoint now",
  description:
    "POSTs one signed `webhook.test` event to this endpoint at once, outside the outbox (not recorded, not retried, not in " +
    "`GET /v1/events`), and answers how the endpoint replied. The same URL check and signature as a real delivery.",
  security: CALLERS.partnerChange,
  request: { params: IdParams },
  responses: {
    200: {
      description: "The attempt's outcome (a refusal by the endpoint is `ok: false`, not an error of this call)",
      content: {
        "application/json": {
          schema: z.object({
            eventId: z.string(),
            ok: z.boolean(),
            statusCode: z.number().int().nullable(),
            durationMs: z.number().int(),
            error: z.string().nullable(),
            responseExcerpt: z.string().nullable(),
          }),
        },
      },
    },
    ...errorResponses("not_found"),
  },
});

/** `/v1/webhook-endpoints`: where a partner receives its signed events (docs/quick-start.md, docs/events.md). */
export function webhookEndpointsRoutes(context: AppContext) {
  const policy = { localMode: context.settings.localMode };
  const attemptTimeoutMs = context.settings.dispatcher.attemptTimeoutMs;
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(createRouteDef, async (c) => {
      const body = c.req.valid("json");
      const endpoint = await createWebhookEndpoint(context.store, {
        partnerId: c.get("partner").id,
        url: body.url,
        events: body.events,
        policy,
        secretBox: context.secretBox,
      });
      return c.json(endpoint, 201);
    })
    .openapi(listRouteDef, async (c) => {
      const query = c.req.valid("query");
      const page = await listWebhookEndpoints(context.store, {
        partnerId: c.get("partner").id,
        cursor: query.cursor,
        limit: query.limit,
      });
      return c.json(page, 200);
    })
    .openapi(getRouteDef, async (c) => {
      const endpoint = await getWebhookEndpoint(context.store, {
        partnerId: c.get("partner").id,
        endpointId: c.req.valid("param").id,
      });
      return c.json(endpoint, 200);
    })
    .openapi(deleteRouteDef, async (c) => {
      const { id } = c.req.valid("param");
      await deleteWebhookEndpoint(context.store, { partnerId: c.get("partner").id, endpointId: id });
      return c.json({ id, deleted: true as const }, 200);
    })
    .openapi(rotateRouteDef, async (c) => {
      const body = c.req.valid("json");
      const rotated = await rotateWebhookSecret(context.store, {
        partnerId: c.get("partner").id,
        endpointId: c.req.valid("param").id,
        previousSecretLifetimeSeconds: body.previousSecretExpiresInSeconds,
        secretBox: context.secretBox,
      });
      return c.json(rotated, 200);
    })
    .openapi(testRouteDef, async (c) => {
      const result = await sendTestEvent(context.store, {
        partnerId: c.get("partner").id,
        endpointId: c.req.valid("param").id,
        secretBox: context.secretBox,
        policy,
        timeoutMs: attemptTimeoutMs,
      });
      return c.json(result, 200);
    });
}
