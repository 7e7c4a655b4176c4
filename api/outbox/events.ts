import type { Kysely } from "kysely";
import { keysetPage, type Page } from "../http/cursor.js";
import { problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { EventEnvelope } from "./event-types.js";

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
