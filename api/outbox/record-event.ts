import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { keysetPage, type Page } from "../http/cursor.js";
import { problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import { enqueueDeliveries, newDelivery } from "./deliveries.js";
import type { EventData, EventEnvelope, EventType } from "./event-types.js";
import { subscribesTo } from "./subscription.js";
import { liveEndpointSubscriptions } from "./webhook-endpoints.js";

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
  const endpoints = await liveEndpointSubscriptions(trx, params.partnerId);
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

/**
 * A partner's events in the order they were recorded (reconciliation feed). Its
 * cursor is an event id, "the events after this one": `nextCursor` is the id of the
 * page's last event, and goes back as `cursor` like every list's. A partner that keeps
 * the id of the last event it processed passes it as `after` (the documented way to
 * ask for what it missed; an id that is not one of its events is `invalid_request`).
 * `cursor` is a list cursor: one that names none of the partner's events is
 * `invalid_cursor`. One of the two, not both.
 */
export async function listEvents(
  store: Store,
  params: { partnerId: string; after?: string; cursor?: string; type?: string; limit: number },
): Promise<Page<EventEnvelope>> {
  if (params.after !== undefined && params.cursor !== undefined)
    throw problems.invalidRequest("Pass either `after` (an event id) or `cursor` (a `nextCursor`), not both.");
  const seqOf = async (eventId: string): Promise<number | undefined> => {
    const row = await store
      .selectFrom("event")
      .select("seq")
      .where("id", "=", eventId)
      .where("partner_id", "=", params.partnerId)
      .executeTakeFirst();
    return row === undefined ? undefined : Number(row.seq);
  };
  let afterSeq = 0;
  if (params.after !== undefined) {
    const seq = await seqOf(params.after);
    if (seq === undefined) throw problems.invalidRequest("`after` must be the id of one of your events.");
    afterSeq = seq;
  }
  return keysetPage<{ id: string; payload: string }, number, EventEnvelope>({
    cursor: params.cursor,
    limit: params.limit,
    resolveCursor: seqOf,
    cursorOf: (row) => row.id,
    fetch: (after, take) => {
      let query = store
        .selectFrom("event")
        .select(["id", "payload"])
        .where("partner_id", "=", params.partnerId)
        .where("seq", ">", after ?? afterSeq);
      if (params.type !== undefined) query = query.where("type", "=", params.type);
      return query.orderBy("seq").limit(take).execute();
    },
    view: (rows) => rows.map((row) => JSON.parse(row.payload) as EventEnvelope),
  });
}

/** One of the partner's events, as its webhook body; another partner's event is "not found". */
export async function getEvent(db: Kysely<Database>, params: { partnerId: string; eventId: string }) {
  const row = await db
    .selectFrom("event")
    .select(["id", "seq", "type", "ordering_key", "payload"])
    .where("id", "=", params.eventId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  if (row === undefined) throw problems.notFound(`Event ${params.eventId}`);
  return row;
}

/** The partner's events about one order (its ordering key), oldest first, as their webhook bodies: an order's evidence. */
export async function eventsOfOrder(db: Kysely<Database>, params: { partnerId: string; orderId: string }) {
  const rows = await db
    .selectFrom("event")
    .select(["id", "type", "payload", "created_at"])
    .where("partner_id", "=", params.partnerId)
    .where("ordering_key", "=", params.orderId)
    .orderBy("seq")
    .limit(500)
    .execute();
  return rows.map((row) => ({ id: row.id, type: row.type, createdAt: Number(row.created_at) }));
}

/**
 * The partner's metadata of a session, or of the order's latest session (null when it has none):
 * what an event about an order carries, and the books' rows. Read here, beside the event, and not
 * through api/checkout/session-record.ts: api/checkout records events (`session.expired`), so the
 * outbox importing checkout would close an import circle (test/record-ownership.test.ts, READERS).
 */
export async function sessionMetadata(
  db: Kysely<Database>,
  of: { sessionId: string } | { orderId: string },
): Promise<Record<string, string> | null> {
  let select = db.selectFrom("checkout_session").select("metadata_json");
  select =
    "sessionId" in of
      ? select.where("id", "=", of.sessionId)
      : select.where("order_id", "=", of.orderId).orderBy("created_at", "desc");
  const row = await select.limit(1).executeTakeFirst();
  return row?.metadata_json ? (JSON.parse(row.metadata_json) as Record<string, string>) : null;
}
