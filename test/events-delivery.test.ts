import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { type Address, erc20Abi } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { listDeliveries } from "../api/outbox/deliveries.js";
import type { EventEnvelope } from "../api/outbox/event-types.js";
import { recordEvent } from "../api/outbox/record-event.js";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { verifySignature, WebhookSignatureError } from "../client/src/signature.js";
import { findFreePort } from "../local/ports.js";
import { createSession } from "./support/checkout-helpers.js";
import { sampleEventData, sampleSettledData } from "./support/sample-event.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// Event delivery and webhook endpoints on one stack, a describe block per former file (events-delivery,
// then events-endpoints), each reading the stack through sharedStack(). Short retry waits and attempt
// timeout so that failure paths run in seconds; the schedule's shape is the production one.
// events-endpoints runs last: its last case restarts the service outside local mode for good.
// One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack({
    env: { WEBHOOK_RETRY_BASE_MS: "20", WEBHOOK_RETRY_MAX_DELAY_MS: "1000", WEBHOOK_ATTEMPT_TIMEOUT_MS: "2000" },
  });
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("events-delivery", () => {
  let stack: TestStack;
  let store: Store;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    stack = sharedStack();
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  });
  afterAll(async () => {
    for (const receiver of receivers) await receiver.close();
    await store?.destroy();
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
      expect(delivery?.attempts[0]).toMatchObject({
        statusCode: 302,
        error: expect.stringMatching(/redirects are not followed/),
      });
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
      for (let index = 0; index < 200; index++)
        produced.push(await produce({ orderingKey: keys[index % keys.length] as string }));

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
});

describe("events-endpoints", () => {
  let stack: TestStack;
  let store: Store;
  let otherApiKey: string;
  let otherPartnerId: string;

  beforeAll(async () => {
    stack = sharedStack();
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    const other = await createPartner(store, { name: "Other shop" });
    otherPartnerId = other.id;
    otherApiKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
  });
  afterAll(async () => {
    await store?.destroy();
  });

  const asOther = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    stack.partnerFetch(path, { ...init, headers: { Authorization: `Bearer ${otherApiKey}` } });

  function produce(partnerId: string, orderingKey: string, type: EventEnvelope["type"] = "purchase.settled") {
    return store
      .transaction()
      .execute((trx) => recordEvent(trx, { partnerId, type, orderingKey, data: sampleEventData(type, orderingKey) }));
  }

  async function expectProblem(response: Response, status: number, code: string) {
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    const body = (await response.json()) as { code: string; status: number; detail: string };
    expect({ status: response.status, code: body.code }).toEqual({ status, code });
    return body;
  }

  const create = (json: unknown) => stack.partnerFetch("/v1/webhook-endpoints", { method: "POST", json });

  describe("webhook endpoints", () => {
    it("creates, lists without secrets, reads, pages and deletes", async () => {
      const created = await create({ url: "http://127.0.0.1:9/a", events: ["purchase.settled", "reward.claimed"] });
      expect(created.status).toBe(201);
      const endpoint = await created.json();
      expect(Object.keys(endpoint).sort()).toEqual(["createdAt", "events", "id", "previousSecretExpiresAt", "secret", "url"]);
      expect(endpoint).toMatchObject({ url: "http://127.0.0.1:9/a", events: ["purchase.settled", "reward.claimed"] });
      expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      const second = await (await create({ url: "http://localhost:9/b" })).json();
      expect(second.events).toEqual(["*"]);

      // The secret is stored encrypted, never in clear.
      const row = await store.selectFrom("webhook_endpoint").selectAll().where("id", "=", endpoint.id).executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain(endpoint.secret);
      expect(JSON.stringify(row)).not.toContain(endpoint.secret.slice(6));

      const page1 = await (await stack.partnerFetch("/v1/webhook-endpoints?limit=1")).json();
      expect(page1.data).toHaveLength(1);
      expect(page1.data[0].id).toBe(endpoint.id);
      expect(page1.data[0].secret).toBeUndefined();
      expect(page1.nextCursor).toEqual(expect.any(String));
      const page2 = await (await stack.partnerFetch(`/v1/webhook-endpoints?limit=1&cursor=${page1.nextCursor}`)).json();
      expect(page2.data.map((e: { id: string }) => e.id)).toEqual([second.id]);
      expect(page2.nextCursor).toBeNull();

      const read = await (await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}`)).json();
      expect(read).toEqual({ ...endpoint, secret: undefined, previousSecretExpiresAt: null });

      for (const id of [endpoint.id, second.id]) {
        const deleted = await stack.partnerFetch(`/v1/webhook-endpoints/${id}`, { method: "DELETE" });
        expect(await deleted.json()).toEqual({ id, deleted: true });
      }
      await expectProblem(await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}`), 404, "not_found");
      await expectProblem(
        await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}`, { method: "DELETE" }),
        404,
        "not_found",
      );
      expect((await (await stack.partnerFetch("/v1/webhook-endpoints")).json()).data).toEqual([]);
    });

    it("accepts every event type, reward.claimed included, and rejects unknown ones", async () => {
      const all = [
        "purchase.settled",
        "certificate.minted",
        "reward.claimed",
        "session.expired",
        "payment.unresolved",
        "payment.reorged",
        "payment.restored",
        "order.fulfilled",
      ];
      const created = await create({ url: "http://127.0.0.1:9/types", events: all });
      expect(created.status).toBe(201);
      const endpoint = await created.json();
      await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}`, { method: "DELETE" });
      await expectProblem(
        await create({ url: "http://127.0.0.1:9/types", events: ["purchase.refunded"] }),
        400,
        "invalid_request",
      );
      await expectProblem(await create({ url: "http://127.0.0.1:9/types", events: [] }), 400, "invalid_request");
    });

    it("refuses private, link-local, reserved and unspecified addresses, odd schemes and credentials", async () => {
      const refused = [
        "http://10.0.0.1/hook",
        "http://172.16.5.4/hook",
        "http://192.168.1.10/hook",
        "http://100.64.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://0.0.0.0:8080/hook",
        "http://224.0.0.1/hook",
        "http://[::]/hook",
        "http://[fe80::1]/hook",
        "http://[fd00::1]/hook",
        "http://[::ffff:10.0.0.1]/hook",
        "http://[::ffff:169.254.169.254]/hook",
        "ftp://127.0.0.1/hook",
        "http://user:pass@127.0.0.1/hook",
        "not a url",
      ];
      for (const url of refused) {
        const body = await expectProblem(await create({ url }), 400, "invalid_webhook_url");
        expect(body.detail.length).toBeGreaterThan(10);
      }
      expect((await (await stack.partnerFetch("/v1/webhook-endpoints")).json()).data).toEqual([]);
    });
  });

  describe("partner isolation", () => {
    it("keeps endpoints, events and deliveries to their partner", async () => {
      const mine = await (await create({ url: "http://127.0.0.1:9/mine" })).json();
      const event = await produce(stack.local.partner.id, "ord_isolation");
      const theirs = await produce(otherPartnerId, "ord_other");

      expect((await (await asOther("/v1/webhook-endpoints")).json()).data).toEqual([]);
      await expectProblem(await asOther(`/v1/webhook-endpoints/${mine.id}`), 404, "not_found");
      await expectProblem(await asOther(`/v1/webhook-endpoints/${mine.id}`, { method: "DELETE" }), 404, "not_found");
      await expectProblem(await asOther(`/v1/webhook-endpoints/${mine.id}/rotate-secret`, { method: "POST" }), 404, "not_found");
      await expectProblem(await asOther(`/v1/events/${event.id}`), 404, "not_found");
      await expectProblem(await asOther(`/v1/events/${event.id}/deliveries`), 404, "not_found");
      await expectProblem(await asOther(`/v1/events/${event.id}/redeliver`, { method: "POST" }), 404, "not_found");
      await expectProblem(await asOther(`/v1/events?after=${event.id}`), 400, "invalid_request");
      const otherEvents = await (await asOther("/v1/events")).json();
      expect(otherEvents.data.map((e: { id: string }) => e.id)).toEqual([theirs.id]);
      // Another partner's endpoint is not a redelivery target either.
      await expectProblem(
        await asOther(`/v1/events/${theirs.id}/redeliver`, { method: "POST", json: { endpointId: mine.id } }),
        404,
        "not_found",
      );
      const deliveries = await store
        .selectFrom("webhook_delivery")
        .select("event_id")
        .where("endpoint_id", "=", mine.id)
        .execute();
      expect(deliveries.map((row) => row.event_id)).toEqual([event.id]);

      // The admin portal's view spans partners.
      const theirEndpoint = await (
        await asOther("/v1/webhook-endpoints", { method: "POST", json: { url: "http://127.0.0.1:9/theirs" } })
      ).json();
      const theirLater = await produce(otherPartnerId, "ord_other");
      const everyone = await listDeliveries(store, {});
      expect(everyone.data.map((d) => d.eventId)).toEqual(expect.arrayContaining([event.id, theirLater.id]));
      const onlyTheirs = await listDeliveries(store, { partnerId: otherPartnerId });
      expect(onlyTheirs.data.map((d) => [d.partnerId, d.eventId, d.eventType])).toEqual([
        [otherPartnerId, theirLater.id, "purchase.settled"],
      ]);
      const first = await listDeliveries(store, { limit: 1 });
      expect(first.data).toHaveLength(1);
      const second = await listDeliveries(store, { limit: 1, cursor: first.nextCursor as string });
      expect(second.data[0]?.id).not.toBe(first.data[0]?.id);
      expect((await listDeliveries(store, { status: "delivered" })).data.every((d) => d.status === "delivered")).toBe(true);

      await asOther(`/v1/webhook-endpoints/${theirEndpoint.id}`, { method: "DELETE" });
      await stack.partnerFetch(`/v1/webhook-endpoints/${mine.id}`, { method: "DELETE" });
      const anonymous = await fetch(`${stack.ponder.baseUrl}/v1/events`);
      await expectProblem(anonymous, 401, "unauthenticated");
    });
  });

  describe("OpenAPI", () => {
    it("documents the webhook endpoint and event routes", async () => {
      const document = await (await fetch(`${stack.ponder.baseUrl}/openapi.json`)).json();
      expect(Object.keys(document.paths)).toEqual(
        expect.arrayContaining([
          "/v1/webhook-endpoints",
          "/v1/webhook-endpoints/{id}",
          "/v1/webhook-endpoints/{id}/rotate-secret",
          "/v1/events",
          "/v1/events/{id}",
          "/v1/events/{id}/deliveries",
          "/v1/events/{id}/redeliver",
        ]),
      );
    });
  });

  describe("reconciliation feed", () => {
    it("lists the partner's events in order, after a cursor, by type", async () => {
      const first = await produce(stack.local.partner.id, "ord_feed", "purchase.settled");
      const second = await produce(stack.local.partner.id, "ord_feed", "reward.claimed");
      const third = await produce(stack.local.partner.id, "ord_feed", "order.fulfilled");

      const page = await (await stack.partnerFetch(`/v1/events?after=${first.id}&limit=1`)).json();
      expect(page.data).toEqual([second]);
      expect(page.nextCursor).toBe(second.id);
      const rest = await (await stack.partnerFetch(`/v1/events?after=${page.nextCursor}`)).json();
      expect(rest).toEqual({ data: [third], nextCursor: null });
      const rewards = await (await stack.partnerFetch("/v1/events?type=reward.claimed")).json();
      expect(rewards.data).toEqual([second]);
      expect(await (await stack.partnerFetch(`/v1/events/${third.id}`)).json()).toEqual(third);
      await expectProblem(await stack.partnerFetch("/v1/events?type=nope"), 400, "invalid_request");
    });

    it("pages by `cursor` like every list; a cursor naming no event of the partner is invalid_cursor", async () => {
      const first = await produce(stack.local.partner.id, "ord_paged", "purchase.settled");
      const second = await produce(stack.local.partner.id, "ord_paged", "reward.claimed");
      const third = await produce(stack.local.partner.id, "ord_paged", "order.fulfilled");
      const theirs = await produce(otherPartnerId, "ord_paged_other");

      const page1 = await (await stack.partnerFetch(`/v1/events?after=${first.id}&limit=1`)).json();
      expect(page1).toEqual({ data: [second], nextCursor: second.id });
      const page2 = await (await stack.partnerFetch(`/v1/events?cursor=${page1.nextCursor}&limit=1`)).json();
      expect(page2.data).toEqual([third]);
      expect(page2.nextCursor === null || typeof page2.nextCursor === "string").toBe(true);

      // Every page of the whole feed by `cursor` alone: each event once, in order.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor === null ? "limit=2" : `limit=2&cursor=${cursor}`;
        const page = (await (await stack.partnerFetch(`/v1/events?${query}`)).json()) as {
          data: { id: string }[];
          nextCursor: string | null;
        };
        seen.push(...page.data.map((event) => event.id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(seen.slice(-3)).toEqual([first.id, second.id, third.id]);
      expect(new Set(seen).size).toBe(seen.length);

      await expectProblem(await stack.partnerFetch(`/v1/events?cursor=${theirs.id}`), 400, "invalid_cursor");
      await expectProblem(await stack.partnerFetch("/v1/events?cursor=evt_made_up"), 400, "invalid_cursor");
      await expectProblem(await asOther(`/v1/events?cursor=${first.id}`), 400, "invalid_cursor");
      await expectProblem(await asOther(`/v1/events?after=${first.id}`), 400, "invalid_request");
      await expectProblem(await stack.partnerFetch(`/v1/events?after=${first.id}&cursor=${second.id}`), 400, "invalid_request");
    });
  });

  describe("outside local mode", () => {
    let server: Server;
    let connections = 0;

    beforeAll(async () => {
      // A plain TCP listener: any connection at all would be counted.
      server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it("requires https and refuses loopback, by literal or by name; refuses again at delivery time", async () => {
      const port = (server.address() as { port: number }).port;
      // Registered while local mode allowed it.
      const local = await (await create({ url: `https://localhost:${port}/hook` })).json();
      expect(local.id).toMatch(/^we_/);

      // The rest of this file runs outside local mode (keep this describe last). A fresh
      // index schema spares the wait for the previous process' lock on the old one.
      await stack.restartService({ LOCAL_MODE: "false", PUBLIC_BASE_URL: stack.ponder.baseUrl, DATABASE_SCHEMA: "strict_mode" });
      const refusals: [string, RegExp][] = [
        ["http://example.com/hook", /https/],
        [`https://127.0.0.1:${port}/hook`, /loopback/],
        ["https://[::1]/hook", /loopback/],
        [`https://localhost:${port}/hook`, /localhost resolves to .*loopback/],
        ["https://10.1.1.1/hook", /private/],
      ];
      for (const [url, reason] of refusals) {
        const body = await expectProblem(await create({ url }), 400, "invalid_webhook_url");
        expect([url, body.detail]).toEqual([url, expect.stringMatching(reason)]);
      }

      const event = await produce(stack.local.partner.id, "ord_recheck");
      const delivery = await waitFor(async () => {
        const response = await stack.partnerFetch(`/v1/events/${event.id}/deliveries`);
        const list = (await response.json()).data as {
          endpointId: string;
          attempts: { error: string | null; statusCode: number | null }[];
        }[];
        const mine = list.find((d) => d.endpointId === local.id);
        return mine !== undefined && mine.attempts.length >= 2 ? mine : undefined;
      });
      expect(delivery.attempts[0]).toMatchObject({
        statusCode: null,
        error: expect.stringMatching(/^refused to connect: localhost resolves to .* loopback address/),
      });
      expect(connections).toBe(0);
      await stack.partnerFetch(`/v1/webhook-endpoints/${local.id}`, { method: "DELETE" });
    });
  });
});
