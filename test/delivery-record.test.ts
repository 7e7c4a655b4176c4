import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AttemptResult,
  cancelEndpointDeliveries,
  claimDueDeliveries,
  type DeliveryTransitionName,
  deliveryTransitions,
  enqueueDeliveries,
  findDelivery,
  listDeliveries,
  newDelivery,
  nextAfterAttempt,
  recordAttempt,
  requeueDelivery,
} from "../api/outbox/deliveries.js";
import type { Store } from "../api/store/open-store.js";
import { allows } from "../api/store/transition-table.js";
import type { WebhookDeliveryStatus } from "../api/store/webhook-tables.js";
import { unitStore } from "./support/unit-store.js";

// Fast unit tests of the webhook delivery record: its transition table, the pure
// choice of the move after an attempt, and the guarded writes on a real migrated
// SQLite store. No chain, no indexer, no HTTP.

const STATUSES: WebhookDeliveryStatus[] = ["pending", "delivered", "failed", "cancelled"];
const LEGAL: Record<DeliveryTransitionName, WebhookDeliveryStatus[]> = {
  deliver: ["pending"],
  retry: ["pending"],
  fail: ["pending"],
  cancel: ["pending"],
  redeliver: ["pending", "delivered", "failed", "cancelled"],
};

const result = (over: Partial<AttemptResult>): AttemptResult => ({
  ok: false,
  endpointDeleted: false,
  finishedAt: 10_000,
  deadline: 20_000,
  retryDelayMs: 4_000,
  ...over,
});

let store: Store;
let close: () => Promise<void>;
let sequence = 0;

async function seedEndpoint(): Promise<{ partnerId: string; endpointId: string }> {
  sequence++;
  const partnerId = `ptn_${sequence}`;
  const endpointId = `whe_${sequence}`;
  await store.insertInto("partner").values({ id: partnerId, name: partnerId, created_at: 0 }).execute();
  await store
    .insertInto("webhook_endpoint")
    .values({
      id: endpointId,
      partner_id: partnerId,
      url: "https://receiver.example/hook",
      events_json: '["*"]',
      secret_ciphertext: "unused",
      previous_secret_ciphertext: null,
      previous_secret_expires_at: null,
      created_at: 0,
      updated_at: 0,
      deleted_at: null,
    })
    .execute();
  return { partnerId, endpointId };
}

async function seedDelivery(params: { partnerId: string; endpointId: string; orderingKey?: string; now?: number }) {
  sequence++;
  const eventId = `evt_${sequence}`;
  const { seq } = await store
    .insertInto("event")
    .values({
      id: eventId,
      partner_id: params.partnerId,
      type: "purchase.settled",
      ordering_key: params.orderingKey ?? "ord_1",
      payload: "{}",
      created_at: 0,
    })
    .returning("seq")
    .executeTakeFirstOrThrow();
  const delivery = newDelivery({
    event: { id: eventId, seq: Number(seq), orderingKey: params.orderingKey ?? "ord_1" },
    endpoint: { id: params.endpointId },
    partnerId: params.partnerId,
    now: params.now ?? 1_000,
  });
  await store.transaction().execute((trx) => enqueueDeliveries(trx, [delivery]));
  return { id: delivery.id, eventId };
}

beforeAll(async () => {
  ({ store, close } = await unitStore());
});
afterAll(async () => close());

describe("the webhook delivery transition table", () => {
  it("lists exactly the legal moves", () => {
    expect(Object.keys(deliveryTransitions).sort()).toEqual(Object.keys(LEGAL).sort());
    for (const name of Object.keys(LEGAL) as DeliveryTransitionName[]) {
      for (const status of STATUSES)
        expect(allows(deliveryTransitions, name, status), `${name} from ${status}`).toBe(LEGAL[name].includes(status));
    }
    expect(deliveryTransitions.deliver.to).toBe("delivered");
    expect(deliveryTransitions.retry.to).toBe("pending");
    expect(deliveryTransitions.fail.to).toBe("failed");
    expect(deliveryTransitions.cancel.to).toBe("cancelled");
    expect(deliveryTransitions.redeliver.to).toBe("pending");
  });

  it("leads every attempt to exactly one move", () => {
    expect(nextAfterAttempt(result({ ok: true }))).toEqual({ transition: "deliver", nextAttemptAt: 10_000, deliveredAt: 10_000 });
    // A 2xx wins even if the endpoint was deleted meanwhile or the window just closed.
    expect(nextAfterAttempt(result({ ok: true, endpointDeleted: true, finishedAt: 30_000 })).transition).toBe("deliver");
    expect(nextAfterAttempt(result({ endpointDeleted: true }))).toEqual({
      transition: "cancel",
      nextAttemptAt: 10_000,
      deliveredAt: null,
    });
    expect(nextAfterAttempt(result({ finishedAt: 20_000 }))).toEqual({
      transition: "fail",
      nextAttemptAt: 20_000,
      deliveredAt: null,
    });
    expect(nextAfterAttempt(result({}))).toEqual({ transition: "retry", nextAttemptAt: 14_000, deliveredAt: null });
    // The last retry lands on the deadline, never past it.
    expect(nextAfterAttempt(result({ finishedAt: 19_000 })).nextAttemptAt).toBe(20_000);
    for (const ok of [true, false])
      for (const endpointDeleted of [true, false])
        for (const finishedAt of [0, 19_999, 20_000, 50_000]) {
          const input = result({ ok, endpointDeleted, finishedAt });
          const allowed = (["deliver", "retry", "fail", "cancel"] as const).filter(
            (name) => deliveryTransitions[name].refuse(input) === undefined,
          );
          expect(allowed, JSON.stringify(input)).toHaveLength(1);
        }
  });
});

describe("the webhook delivery record on SQLite", () => {
  it("claims a due delivery once, records the attempt and its move, and only under the claim's lease", async () => {
    const lane = await seedEndpoint();
    const { id } = await seedDelivery(lane);
    expect(await findDelivery(store, id)).toMatchObject({ status: "pending", attemptCount: 0, lease: null, queuedAt: 1_000 });
    const claims = await claimDueDeliveries(store, { limit: 10, leaseMs: 60_000, perEndpoint: 5, perPartner: 5 });
    const claim = claims.find((candidate) => candidate.id === id);
    expect(claim).toBeDefined();
    if (claim === undefined) return;
    expect((await findDelivery(store, id))?.lease?.token).toBe(claim.token);
    // Leased: nobody else claims it.
    const second = await claimDueDeliveries(store, { limit: 10, leaseMs: 60_000, perEndpoint: 5, perPartner: 5 });
    expect(second.map((candidate) => candidate.id)).not.toContain(id);

    // A stale claim (another token) records its attempt but moves nothing.
    await store.transaction().execute((trx) =>
      recordAttempt(trx, {
        claim: { id, token: "stale" },
        endpointId: lane.endpointId,
        attemptCount: 1,
        startedAt: 9_000,
        result: result({ ok: true }),
        outcome: { statusCode: 200, error: null, responseExcerpt: null },
      }),
    );
    expect(await findDelivery(store, id)).toMatchObject({ status: "pending", attemptCount: 0 });

    await store.transaction().execute((trx) =>
      recordAttempt(trx, {
        claim,
        endpointId: lane.endpointId,
        attemptCount: 1,
        startedAt: 9_000,
        result: result({}),
        outcome: { statusCode: 503, error: "HTTP 503", responseExcerpt: "busy" },
      }),
    );
    expect(await findDelivery(store, id)).toMatchObject({
      status: "pending",
      attemptCount: 1,
      nextAttemptAt: 14_000,
      lease: null,
      lastStatusCode: 503,
      lastError: "HTTP 503",
    });
    const attempts = await store.selectFrom("webhook_delivery_attempt").selectAll().where("delivery_id", "=", id).execute();
    expect(attempts.map((attempt) => attempt.status_code)).toEqual([200, 503]);
  });

  it("fails a delivery whose window is over, and redelivery starts it afresh", async () => {
    const lane = await seedEndpoint();
    const { id, eventId } = await seedDelivery(lane);
    const claims = await claimDueDeliveries(store, { limit: 10, leaseMs: 60_000, perEndpoint: 5, perPartner: 5 });
    const claim = claims.find((candidate) => candidate.id === id);
    expect(claim).toBeDefined();
    if (claim === undefined) return;
    await store.transaction().execute((trx) =>
      recordAttempt(trx, {
        claim,
        endpointId: lane.endpointId,
        attemptCount: 7,
        startedAt: 25_000,
        result: result({ finishedAt: 25_000 }),
        outcome: { statusCode: null, error: "timeout", responseExcerpt: null },
      }),
    );
    expect(await findDelivery(store, id)).toMatchObject({ status: "failed", attemptCount: 7, deliveredAt: null });

    const requeued = await store
      .transaction()
      .execute((trx) => requeueDelivery(trx, { eventId, endpointId: lane.endpointId, now: 30_000 }));
    expect(requeued).toBe(id);
    expect(await findDelivery(store, id)).toMatchObject({
      status: "pending",
      attemptCount: 0,
      queuedAt: 30_000,
      nextAttemptAt: 30_000,
    });
    // No delivery of this event to another endpoint: nothing to requeue.
    const other = await seedEndpoint();
    expect(
      await store.transaction().execute((trx) => requeueDelivery(trx, { eventId, endpointId: other.endpointId, now: 1 })),
    ).toBeUndefined();
  });

  it("cancels only pending deliveries of a deleted endpoint", async () => {
    const lane = await seedEndpoint();
    const pending = await seedDelivery(lane);
    const done = await seedDelivery({ ...lane, orderingKey: "ord_2" });
    await store.updateTable("webhook_delivery").set({ status: "delivered" }).where("id", "=", done.id).execute();
    await store.transaction().execute((trx) => cancelEndpointDeliveries(trx, { endpointId: lane.endpointId, now: 40_000 }));
    expect(await findDelivery(store, pending.id)).toMatchObject({ status: "cancelled", lastError: "the endpoint was deleted" });
    expect(await findDelivery(store, done.id)).toMatchObject({ status: "delivered" });
  });

  it("claims only the head of an ordering key's line", async () => {
    const lane = await seedEndpoint();
    const first = await seedDelivery({ ...lane, orderingKey: "ord_line" });
    const second = await seedDelivery({ ...lane, orderingKey: "ord_line" });
    const claims = await claimDueDeliveries(store, { limit: 10, leaseMs: 60_000, perEndpoint: 5, perPartner: 5 });
    const ids = claims.map((claim) => claim.id);
    expect(ids).toContain(first.id);
    expect(ids).not.toContain(second.id);
  });

  it("refuses to write outside the caller's transaction", async () => {
    const lane = await seedEndpoint();
    await expect(cancelEndpointDeliveries(store, { endpointId: lane.endpointId, now: 1 })).rejects.toThrow(
      /inside the caller's transaction/,
    );
  });
});

describe("the admin's list of deliveries", () => {
  it("pages every delivery once, newest first, and refuses a cursor it did not issue", async () => {
    const { partnerId, endpointId } = await seedEndpoint();
    // Two deliveries in the same millisecond: the id breaks the tie, so paging neither repeats nor skips.
    const seeded = [
      await seedDelivery({ partnerId, endpointId, now: 5_000 }),
      await seedDelivery({ partnerId, endpointId, now: 6_000 }),
      await seedDelivery({ partnerId, endpointId, now: 6_000 }),
    ];
    const whole = await listDeliveries(store, { partnerId, limit: 500 });
    expect(whole.nextCursor).toBeNull();
    expect(new Set(whole.data.map((delivery) => delivery.id))).toEqual(new Set(seeded.map((delivery) => delivery.id)));
    expect(whole.data.at(-1)?.id).toBe(seeded[0]?.id);

    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listDeliveries(store, { partnerId, limit: 1, cursor });
      expect(page.data.length).toBeLessThanOrEqual(1);
      paged.push(...page.data.map((delivery) => delivery.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    expect(paged).toEqual(whole.data.map((delivery) => delivery.id));

    await expect(listDeliveries(store, { partnerId, cursor: "not-ours" })).rejects.toMatchObject({ code: "invalid_cursor" });
    const forged = Buffer.from(JSON.stringify({ t: 1e300, i: "x" })).toString("base64url");
    await expect(listDeliveries(store, { partnerId, cursor: forged })).rejects.toMatchObject({ code: "invalid_cursor" });
  });
});
