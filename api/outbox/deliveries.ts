import type { Kysely } from "kysely";
import { z } from "zod";
import { decodeCursor, encodeCursor, splitPage } from "../http/cursor.js";
import { ProblemError, problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { WebhookDeliveryStatus, WebhookDeliveryTable } from "../store/webhook-tables.js";
import { getEvent } from "./events.js";
import { newDelivery } from "./record-event.js";
import { subscribesTo } from "./subscription.js";

export const DELIVERY_STATUSES = [
  "pending",
  "delivered",
  "failed",
  "cancelled",
] as const satisfies readonly WebhookDeliveryStatus[];

export type DeliveryAttempt = {
  id: string;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
};

export type Delivery = {
  id: string;
  eventId: string;
  endpointId: string;
  url: string;
  status: WebhookDeliveryStatus;
  attemptCount: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
};

const iso = (value: number | null) => (value === null ? null : new Date(Number(value)).toISOString());

function toDelivery(row: WebhookDeliveryTable & { url: string }): Delivery {
  return {
    id: row.id,
    eventId: row.event_id,
    endpointId: row.endpoint_id,
    url: row.url,
    status: row.status,
    attemptCount: Number(row.attempt_count),
    nextAttemptAt: row.status === "pending" ? iso(row.next_attempt_at) : null,
    lastAttemptAt: iso(row.last_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    deliveredAt: iso(row.delivered_at),
    createdAt: new Date(Number(row.created_at)).toISOString(),
  };
}

function deliveriesWithUrl(db: Kysely<Database>) {
  return db
    .selectFrom("webhook_delivery")
    .innerJoin("webhook_endpoint", "webhook_endpoint.id", "webhook_delivery.endpoint_id")
    .selectAll("webhook_delivery")
    .select("webhook_endpoint.url as url");
}

/** Every delivery of one of the partner's events, each with all its attempts, oldest first. */
export async function eventDeliveries(
  store: Store,
  params: { partnerId: string; eventId: string },
): Promise<(Delivery & { attempts: DeliveryAttempt[] })[]> {
  await getEvent(store, params);
  const rows = await deliveriesWithUrl(store)
    .where("webhook_delivery.event_id", "=", params.eventId)
    .where("webhook_delivery.partner_id", "=", params.partnerId)
    .orderBy("webhook_delivery.created_at")
    .orderBy("webhook_delivery.id")
    .execute();
  if (rows.length === 0) return [];
  const attempts = await store
    .selectFrom("webhook_delivery_attempt")
    .selectAll()
    .where(
      "delivery_id",
      "in",
      rows.map((row) => row.id),
    )
    .orderBy("started_at")
    .orderBy("id")
    .execute();
  return rows.map((row) => ({
    ...toDelivery(row),
    attempts: attempts
      .filter((attempt) => attempt.delivery_id === row.id)
      .map((attempt) => ({
        id: attempt.id,
        startedAt: new Date(Number(attempt.started_at)).toISOString(),
        durationMs: Number(attempt.duration_ms),
        statusCode: attempt.status_code,
        error: attempt.error,
        responseExcerpt: attempt.response_excerpt,
      })),
  }));
}

/**
 * Queues the same event (same id, same bytes) again. With `endpointId`, to that
 * endpoint, whether or not it subscribes to the type (also how an endpoint created
 * after the event gets it); without, to every current endpoint subscribed to the
 * type. A delivery already made or failed starts a fresh retry schedule; its
 * earlier attempts stay on record.
 */
export async function redeliverEvent(
  store: Store,
  params: { partnerId: string; eventId: string; endpointId?: string },
): Promise<Delivery[]> {
  const now = Date.now();
  const ids = await store.transaction().execute(async (trx) => {
    const event = await getEvent(trx, params);
    let endpoints = trx
      .selectFrom("webhook_endpoint")
      .select(["id", "events_json"])
      .where("partner_id", "=", params.partnerId)
      .where("deleted_at", "is", null);
    if (params.endpointId !== undefined) endpoints = endpoints.where("id", "=", params.endpointId);
    const targets = (await endpoints.orderBy("created_at").execute()).filter(
      (endpoint) => params.endpointId !== undefined || subscribesTo(endpoint.events_json, event.type),
    );
    if (targets.length === 0) {
      if (params.endpointId !== undefined) throw problems.notFound(`Webhook endpoint ${params.endpointId}`);
      throw new ProblemError({
        status: 409,
        code: "no_webhook_endpoint",
        title: "No endpoint to deliver to",
        detail: `None of your webhook endpoints subscribes to ${event.type}; create one or name one with \`endpointId\`.`,
      });
    }
    const queued: string[] = [];
    for (const endpoint of targets) {
      const requeued = await trx
        .updateTable("webhook_delivery")
        .set({
          status: "pending",
          attempt_count: 0,
          queued_at: now,
          next_attempt_at: now,
          locked_until: null,
          lock_token: null,
          delivered_at: null,
          updated_at: now,
        })
        .where("event_id", "=", event.id)
        .where("endpoint_id", "=", endpoint.id)
        .returning("id")
        .executeTakeFirst();
      if (requeued !== undefined) {
        queued.push(requeued.id);
        continue;
      }
      const delivery = newDelivery({
        event: { id: event.id, seq: Number(event.seq), orderingKey: event.ordering_key },
        endpoint,
        partnerId: params.partnerId,
        now,
      });
      await trx.insertInto("webhook_delivery").values(delivery).execute();
      queued.push(delivery.id);
    }
    return queued;
  });
  const rows = await deliveriesWithUrl(store)
    .where("webhook_delivery.id", "in", ids)
    .orderBy("webhook_delivery.created_at")
    .execute();
  return rows.map(toDelivery);
}

const adminCursor = z.object({ t: z.number().int(), i: z.string() });

/**
 * Every partner's deliveries, newest first, for the admin portal
 * (`/api/admin/event-deliveries`); filter by partner and status.
 */
export async function listDeliveries(
  store: Store,
  params: { partnerId?: string; status?: WebhookDeliveryStatus; cursor?: string; limit?: number },
): Promise<{ data: (Delivery & { partnerId: string; eventType: string })[]; nextCursor: string | null }> {
  const limit = Math.min(Math.max(params.limit ?? 100, 1), 500);
  let query = deliveriesWithUrl(store)
    .innerJoin("event", "event.id", "webhook_delivery.event_id")
    .select("event.type as event_type");
  if (params.partnerId !== undefined) query = query.where("webhook_delivery.partner_id", "=", params.partnerId);
  if (params.status !== undefined) query = query.where("webhook_delivery.status", "=", params.status);
  if (params.cursor !== undefined) {
    const after = decodeCursor(params.cursor, adminCursor);
    query = query.where((eb) =>
      eb.or([
        eb("webhook_delivery.created_at", "<", after.t),
        eb.and([eb("webhook_delivery.created_at", "=", after.t), eb("webhook_delivery.id", "<", after.i)]),
      ]),
    );
  }
  const rows = await query
    .orderBy("webhook_delivery.created_at", "desc")
    .orderBy("webhook_delivery.id", "desc")
    .limit(limit + 1)
    .execute();
  const { page, last } = splitPage(rows, limit);
  return {
    data: page.map((row) => ({ ...toDelivery(row), partnerId: row.partner_id, eventType: row.event_type })),
    nextCursor: last === undefined ? null : encodeCursor({ t: Number(last.created_at), i: last.id }),
  };
}
