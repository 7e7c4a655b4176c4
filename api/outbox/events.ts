import type { Kysely } from "kysely";
import { splitPage } from "../http/cursor.js";
import { problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { EventEnvelope } from "./record-event.js";

/**
 * A partner's events in the order they were recorded (reconciliation feed). The
 * cursor is an event id: "the events after this one". A partner that keeps the id
 * of the last event it processed can always ask for what it missed.
 */
export async function listEvents(
  store: Store,
  params: { partnerId: string; after?: string; type?: string; limit: number },
): Promise<{ data: EventEnvelope[]; nextCursor: string | null }> {
  let afterSeq = 0;
  if (params.after !== undefined) {
    const cursor = await store
      .selectFrom("event")
      .select("seq")
      .where("id", "=", params.after)
      .where("partner_id", "=", params.partnerId)
      .executeTakeFirst();
    if (cursor === undefined) throw problems.invalidRequest("`after` must be the id of one of your events.");
    afterSeq = Number(cursor.seq);
  }
  let query = store
    .selectFrom("event")
    .select(["id", "payload"])
    .where("partner_id", "=", params.partnerId)
    .where("seq", ">", afterSeq);
  if (params.type !== undefined) query = query.where("type", "=", params.type);
  const rows = await query
    .orderBy("seq")
    .limit(params.limit + 1)
    .execute();
  const { page, last } = splitPage(rows, params.limit);
  return {
    data: page.map((row) => JSON.parse(row.payload) as EventEnvelope),
    nextCursor: last?.id ?? null,
  };
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
