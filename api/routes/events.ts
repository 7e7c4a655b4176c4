import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { DELIVERY_STATUSES, eventDeliveries, redeliverEvent } from "../outbox/deliveries.js";
import { EVENT_TYPES, eventEnvelopeSchema, eventSchemaName } from "../outbox/event-types.js";
import { getEvent, listEvents } from "../outbox/record-event.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import type { AppEnv } from "./app-env.js";

export const EventEnvelopeSchema = z
  .object({
    id: z.string().openapi({ description: "Unique per event; de-duplicate on it", example: "evt_3f1c..." }),
    type: z.enum(EVENT_TYPES),
    createdAt: z.string().openapi({ description: "ISO 8601" }),
    data: z.record(z.string(), z.unknown()).openapi({
      description: "externalOrderId, orderId, purchaseId, transactionHash and type-specific fields (see docs/events.md)",
    }),
  })
  .openapi("EventEnvelope");

export const DeliverySchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    endpointId: z.string(),
    url: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attemptCount: z.number().int().openapi({ description: "Attempts since the delivery was last queued" }),
    nextAttemptAt: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("EventDelivery");

const AttemptSchema = z
  .object({
    id: z.string(),
    startedAt: z.string(),
    durationMs: z.number().int(),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable(),
    responseExcerpt: z.string().nullable(),
  })
  .openapi("EventDeliveryAttempt");

/**
 * The document's `webhooks`: one entry per event type, its request body the typed
 * envelope (`PurchaseSettledEvent`, ...), from the one declaration in
 * api/outbox/event-types.ts. The client's generated types read them.
 */
export function registerEventWebhooks(app: OpenAPIHono<AppEnv>): void {
  for (const type of EVENT_TYPES) {
    app.openAPIRegistry.registerWebhook({
      method: "post",
      path: type,
      summary: `The signed \`${type}\` event, POSTed to your webhook endpoints`,
      description:
        'Signed with `Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>` (docs/webhooks.md); ' +
        "also listed by `GET /v1/events`.",
      operationId: `receive${eventSchemaName(type)}`,
      // Not an API credential: the receiver checks the signature header with its endpoint's secret.
      security: [],
      request: {
        headers: z.object({
          "Service-Signature": z.string().openapi({ example: "t=1767225600,v1=8f2c…" }),
          "Service-Event-Id": z.string(),
          "Service-Event-Type": z.literal(type),
        }),
        body: { content: { "application/json": { schema: eventEnvelopeSchema(type) } } },
      },
      responses: { 200: { description: "Any 2xx acknowledges the event; anything else is retried" } },
    });
  }
}

const IdParams = z.object({ id: z.string().max(100) });

const listRouteDef = declareRoute({
  method: "get",
  path: "/",
  summary: "Your events in the order they were recorded (reconciliation)",
  description:
    "Pass the id of the last event you processed as `after` to get what came since. `nextCursor` is set when more events " +
    "follow this page; pass it back as `cursor` (like every list) or as `after` (it is the id of the page's last event). " +
    "Every event ever recorded for you is here, whether or not a webhook delivered it.",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      after: z
        .string()
        .max(100)
        .optional()
        .openapi({ description: "The id of one of your events (`invalid_request` otherwise); not with `cursor`" }),
      cursor: z
        .string()
        .max(500)
        .optional()
        .openapi({ description: "`nextCursor` of the previous page; anything else is `invalid_cursor`" }),
      type: z.enum(EVENT_TYPES).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: {
    200: {
      description: "A page of events",
      content: {
        "application/json": { schema: z.object({ data: z.array(EventEnvelopeSchema), nextCursor: z.string().nullable() }) },
      },
    },
  },
});

const getRouteDef = declareRoute({
  method: "get",
  path: "/{id}",
  summary: "Read one event (the envelope its webhook carries)",
  security: CALLERS.partnerRead,
  request: { params: IdParams },
  responses: {
    200: { description: "The event", content: { "application/json": { schema: EventEnvelopeSchema } } },
    ...errorResponses("not_found"),
  },
});

const deliveriesRouteDef = declareRoute({
  method: "get",
  path: "/{id}/deliveries",
  summary: "Deliveries of an event, with every attempt",
  security: CALLERS.partnerRead,
  request: { params: IdParams },
  responses: {
    200: {
      description: "One delivery per endpoint",
      content: {
        "application/json": {
          schema: z.object({ data: z.array(DeliverySchema.extend({ attempts: z.array(AttemptSchema) })) }),
        },
      },
    },
    ...errorResponses("not_found"),
  },
});

const redeliverRouteDef = declareRoute({
  method: "post",
  path: "/{id}/redeliver",
  summary: "Deliver an event again (same id, same body)",
  description:
    "With `endpointId`: to that endpoint (also one created after the event). Without: to every endpoint subscribed to the " +
    "event's type. The delivery starts a fresh retry schedule.",
  security: CALLERS.partnerChange,
  request: {
    params: IdParams,
    body: {
      content: { "application/json": { schema: z.object({ endpointId: z.string().max(100).optional() }) } },
      required: false,
    },
  },
  responses: {
    202: { description: "Queued", content: { "application/json": { schema: z.object({ data: z.array(DeliverySchema) }) } } },
    ...errorResponses("not_found", "no_webhook_endpoint"),
  },
});

/** `/v1/events`: the partner's events, their deliveries, and redelivery (docs/quick-start.md, docs/events.md). */
export function eventsRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(listRouteDef, async (c) => {
      const query = c.req.valid("query");
      const page = await listEvents(context.store, { partnerId: c.get("partner").id, ...query });
      return c.json(page, 200);
    })
    .openapi(getRouteDef, async (c) => {
      const event = await getEvent(context.store, { partnerId: c.get("partner").id, eventId: c.req.valid("param").id });
      return c.json(JSON.parse(event.payload) as z.infer<typeof EventEnvelopeSchema>, 200);
    })
    .openapi(deliveriesRouteDef, async (c) => {
      const data = await eventDeliveries(context.store, { partnerId: c.get("partner").id, eventId: c.req.valid("param").id });
      return c.json({ data }, 200);
    })
    .openapi(redeliverRouteDef, async (c) => {
      const data = await redeliverEvent(context.store, {
        partnerId: c.get("partner").id,
        eventId: c.req.valid("param").id,
        endpointId: c.req.valid("json").endpointId,
      });
      return c.json({ data }, 202);
    });
}
