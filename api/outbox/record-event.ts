import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { sessionMetadata } from "../checkout/session-record.js";
import type { Database } from "../store/database.js";
import { enqueueDeliveries, newDelivery } from "./deliveries.js";
import type { EventData, EventEnvelope, EventType } from "./event-types.js";
import { subscribesTo } from "./subscription.js";

/**
 * Writes an event to the outbox. Call it with the transaction that makes the state
 * change it reports, so the change and its event commit (or roll back) together.
 */
export async function recordEvent<type extends EventType>(
  trx: Kysely<Database>,
  params: { partnerId: string; type: type; orderingKey: string; data: EventData<type>; now?: number },
): Promise<EventEnvelope<type>> {
  const now = params.now ?? Date.now();
  const envelope: EventEnvelope<type> = {
    id: `evt_${randomUUID().replaceAll("-", "")}`,
    type: params.type,
    createdAt: new Date(now).toISOString(),
    data: await withMetadata(trx, params.data),
  };
  const { seq } = await trx
    .insertInto("event")
    .values({
      id: envelope.id,
      partner_id: params.partnerId,
      type: envelope.type,
      ordering_key: params.orderingKey,
      payload: JSON.stringify(envelope),
      created_at: now,
    })
    .returning("seq")
    .executeTakeFirstOrThrow();

  // Fan out now, in the same transaction: the event and its deliveries commit
  // together. Endpoints registered later do not receive this event (a partner can
  // ask for it with POST /v1/events/:id/redeliver or read it from GET /v1/events).
  const endpoints = await trx
    .selectFrom("webhook_endpoint")
    .select(["id", "events_json"])
    .where("partner_id", "=", params.partnerId)
    .where("deleted_at", "is", null)
    .execute();
  const subscribed = endpoints.filter((endpoint) => subscribesTo(endpoint.events_json, envelope.type));
  await enqueueDeliveries(
    trx,
    subscribed.map((endpoint) =>
      newDelivery({
        event: { id: envelope.id, seq: Number(seq), orderingKey: params.orderingKey },
        endpoint,
        partnerId: params.partnerId,
        // The retry schedule runs on the wall clock, whatever instant the event reports.
        now: Date.now(),
      }),
    ),
  );
  return envelope;
}

/**
 * Every event about an order carries the partner's `metadata` of its session (docs/hosted-checkout.md): the session the event names, else the order's latest session.
 */
async function withMetadata<data extends EventData<EventType>>(trx: Kysely<Database>, data: data): Promise<data> {
  if (data.metadata !== undefined) return data;
  const sessionId = "sessionId" in data && typeof data.sessionId === "string" ? data.sessionId : undefined;
  if (sessionId === undefined && data.orderId === undefined) return data;
  const metadata = await sessionMetadata(trx, sessionId !== undefined ? { sessionId } : { orderId: String(data.orderId) });
  return { ...data, metadata: metadata ?? {} };
}
