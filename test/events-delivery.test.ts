import { join } from "node:path";
import { type Address, erc20Abi } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EventEnvelope } from "../api/outbox/event-types.js";
import { recordEvent } from "../api/outbox/record-event.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { verifySignature, WebhookSignatureError } from "../client/src/signature.js";
import { findFreePort } from "../local/ports.js";
import { createSession } from "./support/checkout-helpers.js";
import { sampleSettledData } from "./support/sample-event.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

let stack: TestStack;
let store: Store;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  stack = await startTestStack({
    // Short retry waits and attempt timeout so that failure paths run in seconds;
    // the schedule's shape is the production one.
    env: { WEBHOOK_RETRY_BASE_MS: "20", WEBHOOK_RETRY_MAX_DELAY_MS: "1000", WEBHOOK_ATTEMPT_TIMEOUT_MS: "2000" },
  });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await store?.destroy();
  await stack?.stop();
});

// Every event fans out to every endpoint of the partner: each test removes its own.
const endpointsToDelete: string[] = [];
afterEach(async () => {
  for (const id of endpointsToDelete.splice(0)) await stack.partnerFetch(`/v1/webhook-endpoints/${id}`, { method: "DELETE" });
});

type CreatedEndpoint = { id: string; url: string; events: string[]; secret: string; createdAt: string };

async function createEndpoint(url: string, events?: string[]): Promise<CreatedEndpoint> {
  const response = await stack.partnerFetch("/v1/webhook-endpoints", { method: "POST", json: { url, events } });
  expect(response.status, await response.clone().text()).toBe(201);
  const endpoint = (await response.json()) as CreatedEndpoint;
  endpointsToDelete.push(endpoint.id);
  return endpoint;
}

async function receiver(options: Parameters<typeof startWebhookReceiver>[0] = {}) {
  const started = await startWebhookReceiver(options);
  receivers.push(started);
  return started;
}

/** Records an event the way the settlement engine does: `recordEvent` inside a store transaction. */
function produce(params: { orderingKey: string; externalOrderId?: string }): Promise<EventEnvelope> {
  return store.transaction().execute((trx) =>
    recordEvent(trx, {
      partnerId: stack.local.partner.id,
      type: "purchase.settled",
      orderingKey: params.orderingKey,
      data: sampleSettledData(params.orderingKey, { externalOrderId: params.externalOrderId }),
    }),
  );
}

type DeliveryView = {
  endpointId: string;
  status: string;
  attemptCount: number;
  attempts: { statusCode: number | null; error: string | null; durationMs: number; startedAt: string }[];
};

async function deliveriesOf(eventId: string): Promise<DeliveryView[]> {
  const response = await stack.partnerFetch(`/v1/events/${eventId}/deliveries`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: DeliveryView[] }).data;
}

describe("signed delivery", () => {
  it("delivers the stored payload bytes with headers and a signature the receiver verifies", async () => {
    const hook = await receiver();
    const endpoint = await createEndpoint(hook.url());
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect(endpoint.events).toEqual(["*"]);

    const event = await produce({ orderingKey: "ord_sig", externalOrderId: "A-1" });
    const got = await waitFor(async () => hook.received.find((r) => r.eventId === event.id), { what: "the webhook" });

    const stored = await store.selectFrom("event").select("payload").where("id", "=", event.id).executeTakeFirstOrThrow();
    expect(got.rawBody.toString("utf8")).toBe(stored.payload);
    expect(JSON.parse(got.rawBody.toString("utf8"))).toEqual(event);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["service-event-type"]).toBe("purchase.settled");
    expect(got.headers["user-agent"]).toMatch(/webhooks/);
    const header = got.headers["service-signature"] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);

    expect(verifySignature({ payload: got.rawBody, header, secrets: endpoint.secret }).timestamp).toBeGreaterThan(0);
    const tampered = Buffer.from(got.rawBody);
    tampered[tampered.length - 2] = (tampered[tampered.length - 2] as number) ^ 0x20;
    const code = (run: () => unknown) => {
      try {
        run();
        return "verified";
      } catch (error) {
        return (error as WebhookSignatureError).code;
      }
    };
    expect(code(() => verifySignature({ payload: tampered, header, secrets: endpoint.secret }))).toBe("no_matching_signature");
    expect(
      code(() => verifySignature({ payload: got.rawBody, header, secrets: endpoint.secret, now: Date.now() + 301_000 })),
    ).toBe("timestamp_out_of_tolerance");
    expect(code(() => verifySignature({ payload: got.rawBody, header, secrets: "whsec_wrong" }))).toBe("no_matching_signature");

    const [delivery] = await waitFor(async () => {
      const list = await deliveriesOf(event.id);
      return list[0]?.status === "delivered" ? list : undefined;
    });
    expect(delivery).toMatchObject({ endpointId: endpoint.id, status: "delivered", attemptCount: 1 });
    expect(delivery?.attempts).toHaveLength(1);
    expect(delivery?.attempts[0]).toMatchObject({ statusCode: 204, error: null });
  });

  it("signs with both secrets during a rotation, each verifying on its own", async () => {
    const hook = await receiver();
    const endpoint = await createEndpoint(hook.url());
    const rotated = await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { method: "POST" });
    expect(rotated.status).toBe(200);
    const rotation = (await rotated.json()) as { id: string; secret: string; previousSecretExpiresAt: string };
    expect(rotation.id).toBe(endpoint.id);
    expect(rotation.secret).toMatch(/^whsec_/);
    expect(rotation.secret).not.toBe(endpoint.secret);
    const expiresIn = Date.parse(rotation.previousSecretExpiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(23.9 * 3600_000);
    expect(expiresIn).toBeLessThanOrEqual(24 * 3600_000);

    const event = await produce({ orderingKey: "ord_rotation" });
    const got = await waitFor(async () => hook.received.find((r) => r.eventId === event.id));
    const header = got.headers["service-signature"] as string;
    expect(header.split(",").filter((part) => part.startsWith("v1="))).toHaveLength(2);
    expect(() => verifySignature({ payload: got.rawBody, header, secrets: [endpoint.secret] })).not.toThrow();
    expect(() => verifySignature({ payload: got.rawBody, header, secrets: [rotation.secret] })).not.toThrow();

    // Retiring the old secret at once: only the newest signs.
    const again = await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, {
      method: "POST",
      json: { previousSecretExpiresInSeconds: 0 },
    });
    const newest = (await again.json()) as { secret: string };
    const next = await produce({ orderingKey: "ord_rotation" });
    const got2 = await waitFor(async () => hook.received.find((r) => r.eventId === next.id));
    const header2 = got2.headers["service-signature"] as string;
    expect(header2.split(",").filter((part) => part.startsWith("v1="))).toHaveLength(1);
    expect(() => verifySignature({ payload: got2.rawBody, header: header2, secrets: [newest.secret] })).not.toThrow();
    expect(() => verifySignature({ payload: got2.rawBody, header: header2, secrets: [rotation.secret] })).toThrow(
      WebhookSignatureError,
    );
  });

  it("retries a receiver that fails five times and records all six attempts, succeeding once", async () => {
    const hook = await receiver({ responder: (_request, index) => (index < 5 ? 500 : 200) });
    await createEndpoint(hook.url());
    const event = await produce({ orderingKey: "ord_retry" });

    const [delivery] = await waitFor(async () => {
      const list = await deliveriesOf(event.id);
      return list[0]?.status === "delivered" ? list : undefined;
    });
    expect(hook.received.map((r) => r.eventId)).toEqual(Array(6).fill(event.id));
    expect(hook.acknowledged.map((r) => r.eventId)).toEqual([event.id]);
    expect(delivery?.attemptCount).toBe(6);
    expect(delivery?.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 500, 500, 500, 500, 200]);
    expect(delivery?.attempts[0]?.error).toMatch(/HTTP 500/);
    expect(delivery?.attempts.every((attempt) => attempt.durationMs >= 0)).toBe(true);
    const startTimes = delivery?.attempts.map((attempt) => Date.parse(attempt.startedAt)) ?? [];
    expect([...startTimes].sort((a, b) => a - b)).toEqual(startTimes);
  });

  it("does not follow redirects", async () => {
    const hook = await receiver({ responder: () => 302 });
    await createEndpoint(hook.url());
    const event = await produce({ orderingKey: "ord_redirect" });
    const [delivery] = await waitFor(async () => {
      const list = await deliveriesOf(event.id);
      return (list[0]?.attempts.length ?? 0) >= 1 ? list : undefined;
    });
    expect(delivery?.attempts[0]).toMatchObject({ statusCode: 302, error: expect.stringMatching(/redirects are not followed/) });
  });

  it("redelivers an event with the same id and the same bytes; a later endpoint gets old events only that way", async () => {
    const hook = await receiver();
    const first = await createEndpoint(hook.url("/first"));
    const event = await produce({ orderingKey: "ord_redeliver" });
    await waitFor(async () => ((await deliveriesOf(event.id))[0]?.status === "delivered" ? true : undefined));
    const original = hook.received.find((r) => r.eventId === event.id);

    const response = await stack.partnerFetch(`/v1/events/${event.id}/redeliver`, { method: "POST" });
    expect(response.status).toBe(202);
    const queued = (await response.json()) as { data: { endpointId: string; status: string }[] };
    expect(queued.data).toMatchObject([{ endpointId: first.id, status: "pending" }]);
    await waitFor(async () => (hook.received.filter((r) => r.eventId === event.id).length === 2 ? true : undefined));
    const copies = hook.received.filter((r) => r.eventId === event.id);
    expect(copies[1]?.rawBody.equals(original?.rawBody as Buffer)).toBe(true);
    expect(copies[1]?.headers["service-event-id"]).toBe(event.id);
    const [delivery] = await waitFor(async () => {
      const list = await deliveriesOf(event.id);
      return list[0]?.status === "delivered" && list[0].attempts.length === 2 ? list : undefined;
    });
    expect(delivery?.attempts.map((attempt) => attempt.statusCode)).toEqual([204, 204]);

    // An endpoint created after the event is not sent it...
    const later = await createEndpoint(hook.url("/later"));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await deliveriesOf(event.id)).toHaveLength(1);
    // ...unless asked for by name.
    const named = await stack.partnerFetch(`/v1/events/${event.id}/redeliver`, {
      method: "POST",
      json: { endpointId: later.id },
    });
    expect(named.status).toBe(202);
    await waitFor(async () => {
      const list = await deliveriesOf(event.id);
      return list.find((d) => d.endpointId === later.id)?.status === "delivered" ? true : undefined;
    });
    expect(hook.received.filter((r) => r.eventId === event.id)).toHaveLength(3);

    const missing = await stack.partnerFetch("/v1/events/evt_nope/redeliver", { method: "POST" });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toContain("application/problem+json");
  });
});

describe("ordering and recovery", () => {
  it("delivers 100 real purchases made while the receiver was down, none missing, in order per order", async () => {
    const port = await findFreePort();
    const hook = await receiver({ port, listen: false });
    await createEndpoint(hook.url(), ["purchase.settled", "order.fulfilled"]);

    // 100 purchases paid from 10 accounts at once; each order then fulfilled, so
    // every order has two events that must arrive in order.
    const sessions: Awaited<ReturnType<typeof createSession>>[] = [];
    for (let index = 0; index < 100; index++) sessions.push(await createSession(stack, { certificate: { enabled: false } }));
    // All 100 transfers land in one block: a burst, and one block for the indexer.
    await stack.testClient.setAutomine(false);
    try {
      await Promise.all(
        Array.from({ length: 10 }, async (_, lane) => {
          const wallet = stack.wallet(lane);
          for (let index = lane; index < 100; index += 10) {
            const session = sessions[index]!;
            await wallet.writeContract({
              address: stack.local.contracts.usdc as Address,
              abi: erc20Abi,
              functionName: "transfer",
              args: [session.payment.recipient as Address, BigInt(session.payment.amount)],
              chain: stack.chain,
              account: wallet.account!,
            });
          }
        }),
      );
      await stack.testClient.mine({ blocks: 1 });
    } finally {
      await stack.testClient.setAutomine(true);
    }
    const orderIds = new Set(sessions.map((session) => session.orderId));
    const settledEvents = await waitFor(
      async () => {
        const rows = await store
          .selectFrom("event")
          .select(["id", "seq", "ordering_key", "type"])
          .where("type", "=", "purchase.settled")
          .where("ordering_key", "in", [...orderIds])
          .execute();
        return rows.length === 100 ? rows : undefined;
      },
      { timeoutMs: 60_000, what: "100 settlements" },
    );
    expect(settledEvents).toHaveLength(100);
    for (const session of sessions) {
      const fulfilled = await stack.partnerFetch(`/v1/orders/${session.orderId}/fulfilment`, {
        method: "POST",
        json: { fulfilmentReference: `ship-${session.orderId}`, idempotencyKey: `f-${session.orderId}` },
      });
      expect(fulfilled.status).toBe(200);
    }
    const events = await store
      .selectFrom("event")
      .select(["id", "seq", "ordering_key", "type"])
      .where("ordering_key", "in", [...orderIds])
      .where("type", "in", ["purchase.settled", "order.fulfilled"])
      .orderBy("seq")
      .execute();
    expect(events).toHaveLength(200);

    // The receiver was down all along: attempts failed and nothing is delivered.
    await waitFor(async () => {
      const failed = await store
        .selectFrom("webhook_delivery_attempt")
        .select("id")
        .where("error", "like", "%ECONNREFUSED%")
        .limit(20)
        .execute();
      return failed.length >= 20 ? true : undefined;
    });
    expect(hook.received).toHaveLength(0);

    await hook.listen();
    await waitFor(
      async () => {
        const seen = new Set(hook.acknowledged.map((r) => r.eventId));
        return events.every((event) => seen.has(event.id)) ? true : undefined;
      },
      { timeoutMs: 60_000, what: "all 200 events at the receiver" },
    );
    const settledIds = new Set(events.filter((event) => event.type === "purchase.settled").map((event) => event.id));
    expect(new Set(hook.acknowledged.filter((r) => settledIds.has(r.eventId)).map((r) => r.eventId)).size).toBe(100);

    // Per order: purchase.settled strictly before order.fulfilled, each exactly once.
    const seqOf = new Map(events.map((event) => [event.id, Number(event.seq)]));
    const keyOf = new Map(events.map((event) => [event.id, event.ordering_key]));
    const perKey = new Map<string, number[]>();
    for (const request of hook.received) {
      const key = keyOf.get(request.eventId);
      if (key === undefined) continue;
      perKey.set(key, [...(perKey.get(key) ?? []), seqOf.get(request.eventId) as number]);
    }
    expect(perKey.size).toBe(100);
    for (const [key, seqs] of perKey) {
      const expected = events.filter((event) => event.ordering_key === key).map((event) => Number(event.seq));
      expect([key, seqs]).toEqual([key, expected]);
    }
  });

  // A kill and a restart that waits for Ponder's /ready: under CI's load that alone can take a minute.
  it("loses nothing and marks nothing delivered that was not when the service is killed mid-burst", {
    timeout: 240_000,
  }, async () => {
    const hook = await receiver({ responder: () => ({ status: 200, delayMs: 25 }) });
    await createEndpoint(hook.url());
    const keys = Array.from({ length: 10 }, (_, index) => `ord_burst_${index}`);
    const produced: EventEnvelope[] = [];
    for (let index = 0; index < 200; index++) produced.push(await produce({ orderingKey: keys[index % keys.length] as string }));

    await waitFor(async () => (hook.acknowledged.length >= 30 ? true : undefined), { what: "the burst to be under way" });
    await stack.ponder.stop("SIGKILL");
    const ids = produced.map((event) => event.id);

    const deliveredAtKill = await store
      .selectFrom("webhook_delivery")
      .select("event_id")
      .where("event_id", "in", ids)
      .where("status", "=", "delivered")
      .execute();
    const acknowledgedAtKill = new Set(hook.acknowledged.map((r) => r.eventId));
    expect(deliveredAtKill.length).toBeGreaterThan(0);
    expect(deliveredAtKill.length).toBeLessThan(ids.length);
    for (const row of deliveredAtKill) expect(acknowledgedAtKill.has(row.event_id)).toBe(true);

    // A fresh index schema skips Ponder's wait (about 25 s) for the killed process'
    // lock on the old one; the app store, which this test is about, is the same file.
    await stack.restartService({ DATABASE_SCHEMA: "after_kill" });
    await waitFor(
      async () => {
        const pending = await store
          .selectFrom("webhook_delivery")
          .select("id")
          .where("event_id", "in", ids)
          .where("status", "!=", "delivered")
          .execute();
        return pending.length === 0 ? true : undefined;
      },
      { timeoutMs: 120_000, what: "every delivery after the restart" },
    );
    const acknowledged = new Set(hook.acknowledged.map((r) => r.eventId));
    for (const id of ids) expect(acknowledged.has(id)).toBe(true);

    // At least once, never out of order: per key, what arrived never goes back.
    const seqOf = new Map(produced.map((event, index) => [event.id, index]));
    for (const key of keys) {
      const arrivals = hook.received
        .filter((r) => seqOf.has(r.eventId) && (produced[seqOf.get(r.eventId) as number]?.data.orderId as string) === key)
        .map((r) => seqOf.get(r.eventId) as number);
      for (let index = 1; index < arrivals.length; index++) {
        expect(arrivals[index] as number).toBeGreaterThanOrEqual(arrivals[index - 1] as number);
      }
    }
    // Every delivered row has a 2xx attempt on record.
    const rows = await store
      .selectFrom("webhook_delivery")
      .innerJoin("webhook_delivery_attempt", "webhook_delivery_attempt.delivery_id", "webhook_delivery.id")
      .select(["webhook_delivery.event_id", "webhook_delivery_attempt.status_code"])
      .where("webhook_delivery.event_id", "in", ids)
      .where("webhook_delivery_attempt.status_code", "=", 200)
      .execute();
    expect(new Set(rows.map((row) => row.event_id)).size).toBe(ids.length);
  });
});

describe("graceful stop", () => {
  // The index schema of the restarts above (a graceful stop releases Ponder's lock on it).
  const schema = { DATABASE_SCHEMA: "after_kill" };
  const deliveryOf = (eventId: string) =>
    store
      .selectFrom("webhook_delivery")
      .select(["id", "status", "attempt_count", "locked_until", "lock_token"])
      .where("event_id", "=", eventId)
      .executeTakeFirstOrThrow();

  // Each restart waits for Ponder's /ready; under CI's load that alone can take a minute.
  it("lets an attempt under way finish on SIGTERM instead of cutting it and retrying it later", {
    timeout: 300_000,
  }, async () => {
    // Slower than Ponder's own shutdown (its HTTP server closes within a second), within the grace.
    const hook = await receiver({ responder: () => ({ status: 200, delayMs: 1_800 }) });
    await createEndpoint(hook.url());
    const event = await produce({ orderingKey: "ord_graceful_finish" });
    await waitFor(async () => (hook.received.some((r) => r.eventId === event.id) ? true : undefined), {
      what: "the attempt to be under way",
    });
    const stopping = stack.ponder;
    await stack.restartService(schema);
    expect(stopping.output()).toContain('"msg":"workers stopped","signal":"SIGTERM"');

    // The one request was answered and recorded before the process left: no second attempt.
    expect(await deliveryOf(event.id)).toMatchObject({
      status: "delivered",
      attempt_count: 1,
      locked_until: null,
      lock_token: null,
    });
    expect(hook.received.filter((r) => r.eventId === event.id)).toHaveLength(1);
    expect(hook.acknowledged.filter((r) => r.eventId === event.id)).toHaveLength(1);
  });

  it("releases the lease of an attempt that outlasts the grace, so the next process retries it at once", {
    timeout: 400_000,
  }, async () => {
    // A long attempt timeout: its lease (timeout + 5 s) would hold the delivery for over a minute.
    const slow = { ...schema, WEBHOOK_ATTEMPT_TIMEOUT_MS: "60000", WORKERS_STOP_GRACE_MS: "200" };
    await stack.restartService(slow);
    const hook = await receiver({ responder: (_request, index) => (index === 0 ? { status: 200, delayMs: 30_000 } : 200) });
    await createEndpoint(hook.url());
    const event = await produce({ orderingKey: "ord_graceful_release" });
    await waitFor(async () => (hook.received.some((r) => r.eventId === event.id) ? true : undefined), {
      what: "the attempt to be under way",
    });
    const leased = await deliveryOf(event.id);
    expect(leased.lock_token).not.toBeNull();
    const stopping = stack.ponder;
    await stack.restartService(slow);
    expect(stopping.output()).toContain('"msg":"workers stopped","signal":"SIGTERM"');

    // Well before the old lease would have run out, the new process has delivered it.
    await waitFor(async () => ((await deliveryOf(event.id)).status === "delivered" ? true : undefined), {
      timeoutMs: 40_000,
      what: "the retry by the next process",
    });
    expect(await deliveryOf(event.id)).toMatchObject({ attempt_count: 1, locked_until: null, lock_token: null });
    expect(hook.received.filter((r) => r.eventId === event.id)).toHaveLength(2);
  });
});
