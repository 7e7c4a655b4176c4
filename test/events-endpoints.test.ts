import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listDeliveries } from "../api/outbox/deliveries.js";
import type { EventEnvelope } from "../api/outbox/event-types.js";
import { recordEvent } from "../api/outbox/record-event.js";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { sampleEventData } from "./support/sample-event.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

let stack: TestStack;
let store: Store;
let otherApiKey: string;
let otherPartnerId: string;

beforeAll(async () => {
  stack = await startTestStack({ env: { WEBHOOK_RETRY_BASE_MS: "20", WEBHOOK_RETRY_MAX_DELAY_MS: "200" } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  const other = await createPartner(store, { name: "Other shop" });
  otherPartnerId = other.id;
  otherApiKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
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
    await expectProblem(await stack.partnerFetch(`/v1/webhook-endpoints/${endpoint.id}`, { method: "DELETE" }), 404, "not_found");
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
    await expectProblem(await create({ url: "http://127.0.0.1:9/types", events: ["purchase.refunded"] }), 400, "invalid_request");
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
    const deliveries = await store.selectFrom("webhook_delivery").select("event_id").where("endpoint_id", "=", mine.id).execute();
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
