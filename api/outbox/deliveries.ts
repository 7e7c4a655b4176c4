import { randomUUID } from "node:crypto";
import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool, sql } from "kysely";
import { z } from "zod";
import { keysetPage } from "../http/cursor.js";
import { problem, problems } from "../http/problem.js";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import { refusal, type TransitionTable } from "../store/transition-table.js";
import type { WebhookDeliveryStatus, WebhookDeliveryTable } from "../store/webhook-tables.js";
import { subscribesTo } from "./subscription.js";

/**
 * The webhook delivery record: the only module that reads or writes
 * `webhook_delivery` and `webhook_delivery_attempt`. A delivery's status moves
 * only along `deliveryTransitions`, each by one guarded UPDATE inside the caller's
 * transaction; the dispatcher, the event recorder, endpoint deletion and
 * redelivery all call in here.
 */

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

/**
 * The partner's event that a delivery list or a redelivery is about; another partner's is "not
 * found". (The event's reads are record-event.ts's; this is the one a delivery carries.)
 */
async function deliveredEvent(db: Kysely<Database>, params: { partnerId: string; eventId: string }) {
  const row = await db
    .selectFrom("event")
    .select(["id", "seq", "type", "ordering_key"])
    .where("id", "=", params.eventId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  if (row === undefined) throw problems.notFound(`Event ${params.eventId}`);
  return row;
}

/** Every delivery of one of the partner's events, each with all its attempts, oldest first. */
export async function eventDeliveries(
  store: Store,
  params: { partnerId: string; eventId: string },
): Promise<(Delivery & { attempts: DeliveryAttempt[] })[]> {
  await deliveredEvent(store, params);
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
    const event = await deliveredEvent(trx, params);
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
      throw problem(
        "no_webhook_endpoint",
        `None of your webhook endpoints subscribes to ${event.type}; create one or name one with \`endpointId\`.`,
      );
    }
    const queued: string[] = [];
    for (const endpoint of targets) {
      const requeued = await requeueDelivery(trx, { eventId: event.id, endpointId: endpoint.id, now });
      if (requeued !== undefined) {
        queued.push(requeued);
        continue;
      }
      const delivery = newDelivery({
        event: { id: event.id, seq: Number(event.seq), orderingKey: event.ordering_key },
        endpoint,
        partnerId: params.partnerId,
        now,
      });
      await enqueueDeliveries(trx, [delivery]);
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
  let query = deliveriesWithUrl(store)
    .innerJoin("event", "event.id", "webhook_delivery.event_id")
    .select("event.type as event_type");
  if (params.partnerId !== undefined) query = query.where("webhook_delivery.partner_id", "=", params.partnerId);
  if (params.status !== undefined) query = query.where("webhook_delivery.status", "=", params.status);
  return keysetPage({
    cursor: params.cursor,
    limit: Math.min(Math.max(params.limit ?? 100, 1), 500),
    key: adminCursor,
    fetch: (after, take) =>
      (after === undefined
        ? query
        : query.where(({ eb, refTuple, tuple }) =>
            eb(refTuple("webhook_delivery.created_at", "webhook_delivery.id"), "<", tuple(after.t, after.i)),
          )
      )
        .orderBy("webhook_delivery.created_at", "desc")
        .orderBy("webhook_delivery.id", "desc")
        .limit(take)
        .execute(),
    keyOf: (row) => ({ t: Number(row.created_at), i: row.id }),
    view: (rows) => rows.map((row) => ({ ...toDelivery(row), partnerId: row.partner_id, eventType: row.event_type })),
  });
}

/** A delivery as the domain sees it: epoch milliseconds, numbers as numbers. */
export type WebhookDelivery = {
  id: string;
  eventId: string;
  eventSeq: number;
  orderingKey: string;
  partnerId: string;
  endpointId: string;
  status: WebhookDeliveryStatus;
  attemptCount: number;
  queuedAt: number;
  nextAttemptAt: number;
  /** The lease of the process attempting it, if any. */
  lease: { until: number; token: string } | null;
  lastAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: number | null;
  createdAt: number;
  updatedAt: number;
};

const epochOrNull = (value: number | null) => (value === null ? null : Number(value));

export function toWebhookDelivery(row: WebhookDeliveryTable): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventSeq: Number(row.event_seq),
    orderingKey: row.ordering_key,
    partnerId: row.partner_id,
    endpointId: row.endpoint_id,
    status: row.status,
    attemptCount: Number(row.attempt_count),
    queuedAt: Number(row.queued_at),
    nextAttemptAt: Number(row.next_attempt_at),
    lease:
      row.locked_until === null || row.lock_token === null ? null : { until: Number(row.locked_until), token: row.lock_token },
    lastAttemptAt: epochOrNull(row.last_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    deliveredAt: epochOrNull(row.delivered_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export async function findDelivery(db: Kysely<Database>, id: string): Promise<WebhookDelivery | undefined> {
  const row = await db.selectFrom("webhook_delivery").selectAll().where("id", "=", id).executeTakeFirst();
  return row === undefined ? undefined : toWebhookDelivery(row);
}

/** What one attempt found, as the transition guards read it. */
export type AttemptResult = {
  /** The receiver answered 2xx. */
  ok: boolean;
  endpointDeleted: boolean;
  finishedAt: number;
  /** Queued instant plus the retry window: no retry is scheduled past it. */
  deadline: number;
  /** The backoff drawn for the next retry (see `retryDelayMs`). */
  retryDelayMs: number;
};

const afterAttempt = (input: AttemptResult) => ({
  ok: input.ok,
  deleted: input.endpointDeleted,
  due: input.finishedAt >= input.deadline,
});

/**
 * Every legal move of a delivery. A delivery is born `pending` (when its event is
 * recorded, or when a partner redelivers to an endpoint that never had it); the
 * four moves after an attempt are exclusive: exactly one guard passes for any
 * attempt result (`nextAfterAttempt`). Anything not listed is illegal.
 */
export const deliveryTransitions = {
  /** The receiver answered 2xx. */
  deliver: {
    from: ["pending"],
    to: "delivered",
    guard: "the attempt got a 2xx",
    refuse: (input: AttemptResult) => (afterAttempt(input).ok ? undefined : "the attempt failed"),
  },
  /** The attempt failed within the retry window: try again after a backoff. */
  retry: {
    from: ["pending"],
    to: "pending",
    guard: "failed, endpoint live, retry window open",
    refuse: (input: AttemptResult) => {
      const { ok, deleted, due } = afterAttempt(input);
      return ok ? "the attempt succeeded" : deleted ? "the endpoint was deleted" : due ? "the retry window is over" : undefined;
    },
  },
  /** The attempt failed and the retry window is over. */
  fail: {
    from: ["pending"],
    to: "failed",
    guard: "failed, endpoint live, retry window over",
    refuse: (input: AttemptResult) => {
      const { ok, deleted, due } = afterAttempt(input);
      return ok ? "the attempt succeeded" : deleted ? "the endpoint was deleted" : due ? undefined : "the retry window is open";
    },
  },
  /** Its endpoint was deleted (seen by an attempt, or when the partner deletes it): nothing more is sent. */
  cancel: {
    from: ["pending"],
    to: "cancelled",
    guard: "not delivered and the endpoint was deleted",
    refuse: (input: Pick<AttemptResult, "ok" | "endpointDeleted">) =>
      input.ok ? "the attempt succeeded" : input.endpointDeleted ? undefined : "the endpoint is live",
  },
  /** The partner asks for the event again: a fresh retry schedule, whatever happened before. */
  redeliver: {
    from: ["pending", "delivered", "failed", "cancelled"],
    to: "pending",
    guard: "none (a fresh retry schedule)",
  },
} as const satisfies TransitionTable<WebhookDeliveryStatus, string, WebhookDeliveryTable>;

export type DeliveryTransitionName = keyof typeof deliveryTransitions;

/**
 * The one move an attempt leads to, with the next attempt's instant. The last
 * retry lands on the deadline, so retries span the whole window.
 */
export function nextAfterAttempt(input: AttemptResult): {
  transition: "deliver" | "retry" | "fail" | "cancel";
  nextAttemptAt: number;
  deliveredAt: number | null;
} {
  const allowed = (["deliver", "cancel", "fail", "retry"] as const).filter(
    (name) => refusal(deliveryTransitions, name, { input, now: input.finishedAt }) === undefined,
  );
  if (allowed.length !== 1) throw new Error(`an attempt must allow exactly one move, not ${allowed.join(", ") || "none"}`);
  const transition = allowed[0] as "deliver" | "retry" | "fail" | "cancel";
  return {
    transition,
    nextAttemptAt: transition === "retry" ? Math.min(input.finishedAt + input.retryDelayMs, input.deadline) : input.finishedAt,
    deliveredAt: transition === "deliver" ? input.finishedAt : null,
  };
}

/** A delivery of one event to one endpoint, due at once. */
export function newDelivery(params: {
  event: { id: string; seq: number; orderingKey: string };
  endpoint: { id: string };
  partnerId: string;
  now: number;
}): WebhookDeliveryTable {
  return {
    id: `wdl_${randomUUID().replaceAll("-", "")}`,
    event_id: params.event.id,
    event_seq: params.event.seq,
    ordering_key: params.event.orderingKey,
    partner_id: params.partnerId,
    endpoint_id: params.endpoint.id,
    status: "pending",
    attempt_count: 0,
    queued_at: params.now,
    next_attempt_at: params.now,
    locked_until: null,
    lock_token: null,
    last_attempt_at: null,
    last_status_code: null,
    last_error: null,
    delivered_at: null,
    created_at: params.now,
    updated_at: params.now,
  };
}

/** Queues new deliveries (each `pending`, due at once) inside the caller's transaction. */
export async function enqueueDeliveries(trx: Kysely<Database>, deliveries: readonly WebhookDeliveryTable[]): Promise<void> {
  assertInTransaction(trx, "webhook delivery");
  if (deliveries.length === 0) return;
  await trx
    .insertInto("webhook_delivery")
    .values([...deliveries])
    .execute();
}

/**
 * `redeliver`: the delivery of this event to this endpoint starts a fresh retry
 * schedule (its earlier attempts stay on record). Undefined when there is none yet.
 */
export async function requeueDelivery(
  trx: Kysely<Database>,
  params: { eventId: string; endpointId: string; now: number },
): Promise<string | undefined> {
  assertInTransaction(trx, "webhook delivery");
  const { now } = params;
  const requeued = await trx
    .updateTable("webhook_delivery")
    .set({
      status: deliveryTransitions.redeliver.to,
      attempt_count: 0,
      queued_at: now,
      next_attempt_at: now,
      locked_until: null,
      lock_token: null,
      delivered_at: null,
      updated_at: now,
    })
    .where("event_id", "=", params.eventId)
    .where("endpoint_id", "=", params.endpointId)
    .where("status", "in", deliveryTransitions.redeliver.from)
    .returning("id")
    .executeTakeFirst();
  return requeued?.id;
}

/** `cancel` for every pending delivery of an endpoint the partner deleted. */
export async function cancelEndpointDeliveries(
  trx: Kysely<Database>,
  params: { endpointId: string; now: number },
): Promise<void> {
  assertInTransaction(trx, "webhook delivery");
  await trx
    .updateTable("webhook_delivery")
    .set({ status: deliveryTransitions.cancel.to, updated_at: params.now, last_error: "the endpoint was deleted" })
    .where("endpoint_id", "=", params.endpointId)
    .where("status", "in", deliveryTransitions.cancel.from)
    .execute();
}

export type DeliveryClaim = { id: string; token: string };

/**
 * Hands a claimed delivery back (not a move: it stays `pending`), while this claim
 * still holds its lease: the next process or a replica may attempt it at once.
 */
export async function releaseLease(store: Store, claim: DeliveryClaim): Promise<void> {
  await store
    .updateTable("webhook_delivery")
    .set({ locked_until: null, lock_token: null })
    .where("id", "=", claim.id)
    .where("lock_token", "=", claim.token)
    .execute();
}

/** What an attempt needs: the claimed delivery's endpoint (with its secrets) and the event's body. */
export async function claimedDelivery(store: Store, claim: DeliveryClaim) {
  return store
    .selectFrom("webhook_delivery")
    .innerJoin("event", "event.id", "webhook_delivery.event_id")
    .innerJoin("webhook_endpoint", "webhook_endpoint.id", "webhook_delivery.endpoint_id")
    .selectAll("webhook_endpoint")
    .select([
      "webhook_delivery.attempt_count",
      "webhook_delivery.queued_at",
      "event.id as event_id",
      "event.type as event_type",
      "event.payload as payload",
    ])
    .where("webhook_delivery.id", "=", claim.id)
    .where("webhook_delivery.lock_token", "=", claim.token)
    .executeTakeFirst();
}

/**
 * Records one attempt and the move it leads to (`nextAfterAttempt`), inside the
 * caller's transaction. The attempt is kept even when the lease ran out and another
 * process took the delivery over; the move then applies only if this claim still
 * holds the lease and the delivery is still in the move's `from` state.
 */
export async function recordAttempt(
  trx: Kysely<Database>,
  params: {
    claim: DeliveryClaim;
    endpointId: string;
    attemptCount: number;
    startedAt: number;
    result: AttemptResult;
    outcome: { statusCode: number | null; error: string | null; responseExcerpt: string | null };
  },
): Promise<void> {
  assertInTransaction(trx, "webhook delivery");
  const { claim, result, startedAt, outcome } = params;
  const next = nextAfterAttempt(result);
  const transition = deliveryTransitions[next.transition];
  await trx
    .insertInto("webhook_delivery_attempt")
    .values({
      id: `wda_${randomUUID().replaceAll("-", "")}`,
      delivery_id: claim.id,
      started_at: startedAt,
      duration_ms: result.finishedAt - startedAt,
      status_code: outcome.statusCode,
      error: outcome.error,
      response_excerpt: outcome.responseExcerpt,
    })
    .execute();
  await trx
    .updateTable("webhook_delivery")
    .set({
      status: transition.to,
      next_attempt_at: next.nextAttemptAt,
      delivered_at: next.deliveredAt,
      attempt_count: params.attemptCount,
      last_attempt_at: startedAt,
      last_status_code: outcome.statusCode,
      last_error: outcome.error,
      locked_until: null,
      lock_token: null,
      updated_at: result.finishedAt,
    })
    .where("id", "=", claim.id)
    .where("lock_token", "=", claim.token)
    .where("status", "in", transition.from)
    .execute();
  // The endpoint answers again: its backoff is over for the whole queue. Deliveries
  // waiting out their own backoff from the outage go now instead of minutes later
  // (their order per ordering key still holds: only a line's head is ever claimed).
  if (next.transition === "deliver") {
    await trx
      .updateTable("webhook_delivery")
      .set({ next_attempt_at: result.finishedAt, updated_at: result.finishedAt })
      .where("endpoint_id", "=", params.endpointId)
      .where("status", "=", "pending")
      .where("next_attempt_at", ">", result.finishedAt)
      .execute();
  }
}

/** An earlier delivery of the same ordering key to the same endpoint is still pending. */
function earlierPending(eb: ExpressionBuilder<Database, "webhook_delivery">): Expression<SqlBool> {
  return eb.exists(
    eb
      .selectFrom("webhook_delivery as earlier")
      .select(sql<number>`1`.as("one"))
      .whereRef("earlier.endpoint_id", "=", "webhook_delivery.endpoint_id")
      .whereRef("earlier.ordering_key", "=", "webhook_delivery.ordering_key")
      .where("earlier.status", "=", "pending")
      .whereRef("earlier.event_seq", "<", "webhook_delivery.event_seq"),
  );
}

type Lane = { endpointId: string; partnerId: string; dueSince: number; room: number; granted: number };

/**
 * Claims due deliveries fairly. A delivery is due when it heads its (endpoint,
 * ordering key) line and its time has come. Slots go round-robin: one per partner
 * per round, and within a partner one per endpoint per round, never past the
 * per-endpoint and per-partner caps. The caps count the leases in the store, so
 * they hold across processes; a partner whose endpoints are slow or down can
 * therefore occupy at most `perPartner` slots, and every other partner's
 * deliveries keep going. Each delivery is then claimed with a guarded UPDATE; a
 * row another process claimed first is skipped.
 */
export async function claimDueDeliveries(
  store: Store,
  params: { limit: number; leaseMs: number; perEndpoint: number; perPartner: number },
): Promise<DeliveryClaim[]> {
  const now = Date.now();
  const unleased = (eb: ExpressionBuilder<Database, "webhook_delivery">) =>
    eb.or([eb("webhook_delivery.locked_until", "is", null), eb("webhook_delivery.locked_until", "<", now)]);
  const dueLanes = await store
    .selectFrom("webhook_delivery")
    .select(["webhook_delivery.endpoint_id", "webhook_delivery.partner_id"])
    .select((eb) => eb.fn.min<number>("webhook_delivery.next_attempt_at").as("due_since"))
    .where("webhook_delivery.status", "=", "pending")
    .where("webhook_delivery.next_attempt_at", "<=", now)
    .where(unleased)
    .where((eb) => eb.not(earlierPending(eb)))
    .groupBy(["webhook_delivery.endpoint_id", "webhook_delivery.partner_id"])
    .orderBy("due_since")
    .limit(1000)
    .execute();
  if (dueLanes.length === 0) return [];

  const busy = await store
    .selectFrom("webhook_delivery")
    .select(["endpoint_id", "partner_id"])
    .select((eb) => eb.fn.countAll<number>().as("leased"))
    .where("status", "=", "pending")
    .where("locked_until", ">=", now)
    .groupBy(["endpoint_id", "partner_id"])
    .execute();
  const busyEndpoint = new Map<string, number>();
  const busyPartner = new Map<string, number>();
  for (const row of busy) {
    busyEndpoint.set(row.endpoint_id, (busyEndpoint.get(row.endpoint_id) ?? 0) + Number(row.leased));
    busyPartner.set(row.partner_id, (busyPartner.get(row.partner_id) ?? 0) + Number(row.leased));
  }

  // Partners in the order of their oldest due delivery; each with its endpoints in the same order.
  const partners = new Map<string, { room: number; lanes: Lane[]; next: number }>();
  for (const row of dueLanes) {
    let partner = partners.get(row.partner_id);
    if (partner === undefined) {
      partner = { room: params.perPartner - (busyPartner.get(row.partner_id) ?? 0), lanes: [], next: 0 };
      partners.set(row.partner_id, partner);
    }
    partner.lanes.push({
      endpointId: row.endpoint_id,
      partnerId: row.partner_id,
      dueSince: Number(row.due_since),
      room: params.perEndpoint - (busyEndpoint.get(row.endpoint_id) ?? 0),
      granted: 0,
    });
  }
  let slots = params.limit;
  for (let progress = true; slots > 0 && progress; ) {
    progress = false;
    for (const partner of partners.values()) {
      if (slots === 0) break;
      if (partner.room <= 0) continue;
      for (let tried = 0; tried < partner.lanes.length; tried++) {
        const lane = partner.lanes[partner.next % partner.lanes.length] as Lane;
        partner.next++;
        if (lane.granted >= lane.room) continue;
        lane.granted++;
        partner.room--;
        slots--;
        progress = true;
        break;
      }
    }
  }

  const claims: DeliveryClaim[] = [];
  for (const partner of partners.values()) {
    for (const lane of partner.lanes) {
      if (lane.granted === 0) continue;
      const heads = await store
        .selectFrom("webhook_delivery")
        .select("webhook_delivery.id")
        .where("webhook_delivery.endpoint_id", "=", lane.endpointId)
        .where("webhook_delivery.status", "=", "pending")
        .where("webhook_delivery.next_attempt_at", "<=", now)
        .where(unleased)
        .where((eb) => eb.not(earlierPending(eb)))
        .orderBy("webhook_delivery.next_attempt_at")
        .orderBy("webhook_delivery.event_seq")
        .limit(lane.granted)
        .execute();
      for (const row of heads) {
        const token = randomUUID();
        if (await leaseDelivery(store, { id: row.id, token, until: now + params.leaseMs, now }))
          claims.push({ id: row.id, token });
      }
    }
  }
  return claims;
}

/**
 * The lease of one delivery (not a move: it stays `pending`), taken by one guarded
 * UPDATE only while the delivery is pending, unleased and heads its line; whoever
 * updated the row owns the attempt.
 */
async function leaseDelivery(store: Store, params: { id: string; token: string; until: number; now: number }): Promise<boolean> {
  return store.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable("webhook_delivery")
      .set({ locked_until: params.until, lock_token: params.token })
      .where("webhook_delivery.id", "=", params.id)
      .where("webhook_delivery.status", "=", "pending")
      .where((eb) =>
        eb.or([eb("webhook_delivery.locked_until", "is", null), eb("webhook_delivery.locked_until", "<", params.now)]),
      )
      .where((eb) => eb.not(earlierPending(eb)))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  });
}
