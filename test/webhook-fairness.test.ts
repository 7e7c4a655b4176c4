import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../api/config/config.js";
import type { DispatcherOptions } from "../api/config/option-types.js";
import { settingsOf } from "../api/config/settings.js";
import { webhookDispatcher } from "../api/outbox/dispatcher.js";
import { recordEvent } from "../api/outbox/record-event.js";
import { createSecretBox, createSecretsKeyFileIfMissing, readSecretsKeyFile } from "../api/outbox/secret-box.js";
import { createWebhookEndpoint } from "../api/outbox/webhook-endpoints.js";
import { createPartner } from "../api/partners/api-keys.js";
import { migrateStore, openSqliteStore, type Store } from "../api/store/open-store.js";
import { type RunningWorkers, runWorkers } from "../api/workers/run-worker.js";
import { sampleSettledData } from "./support/sample-event.js";
import { waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// The dispatcher alone, in this process, on a real SQLite store and real HTTP
// receivers: no chain is involved in delivering events, and each test runs the
// dispatcher with the schedule it needs.

let dir: string;
let store: Store;
let workers: RunningWorkers | undefined;
const receivers: WebhookReceiver[] = [];
const settings = settingsOf(
  loadConfig({
    LOCAL_MODE: "true",
    // No chain is read here: the dispatcher only needs a valid configuration.
    LOCAL_RPC_URL: "http://127.0.0.1:1",
    LOCAL_USDC_ADDRESS: "0x0000000000000000000000000000000000000001",
  }),
);

// The dispatcher reads the key file named in the environment; the files after this one in
// the same worker (vitest.config.ts: not isolated) get the environment back as it was.
const secretsKeyFileBefore = process.env.SECRETS_KEY_FILE;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "webhook-fairness-"));
  process.env.SECRETS_KEY_FILE = createSecretsKeyFileIfMissing(join(dir, "secrets.key"));
  store = openSqliteStore(join(dir, "app.sqlite"));
  await migrateStore(store);
});
afterEach(async () => {
  await workers?.stop(10_000);
  workers = undefined;
  for (const receiver of receivers.splice(0)) await receiver.close();
});
afterAll(async () => {
  // Attempts still in flight when a dispatcher stopped end within their timeout.
  await new Promise((resolve) => setTimeout(resolve, baseOptions.attemptTimeoutMs + 500));
  await store?.destroy();
  rmSync(dir, { recursive: true, force: true });
  if (secretsKeyFileBefore === undefined) delete process.env.SECRETS_KEY_FILE;
  else process.env.SECRETS_KEY_FILE = secretsKeyFileBefore;
});

const baseOptions: DispatcherOptions = {
  retryBaseMs: 50,
  retryMaxDelayMs: 200,
  retryWindowMs: 3_600_000,
  attemptTimeoutMs: 2_000,
  concurrency: 32,
  perEndpointConcurrency: 4,
  perPartnerConcurrency: 8,
  pollIntervalMs: 50,
};

function startDispatcher(options: Partial<DispatcherOptions> = {}) {
  workers = runWorkers(store, [webhookDispatcher({ store, settings, secretBox: secretBox() }, { ...baseOptions, ...options })]);
}

async function receiver(options: Parameters<typeof startWebhookReceiver>[0] = {}) {
  const started = await startWebhookReceiver(options);
  receivers.push(started);
  return started;
}

async function partnerWithEndpoints(name: string, urls: string[]) {
  const partner = await createPartner(store, { name });
  for (const url of urls) {
    await createWebhookEndpoint(store, {
      partnerId: partner.id,
      url,
      policy: { localMode: true },
      secretBox: secretBox(),
    });
  }
  return partner;
}

function produce(partnerId: string, orderingKey: string) {
  return store
    .transaction()
    .execute((trx) =>
      recordEvent(trx, { partnerId, type: "purchase.settled", orderingKey, data: sampleSettledData(orderingKey) }),
    );
}

async function deliveryOf(eventId: string) {
  return store.selectFrom("webhook_delivery").selectAll().where("event_id", "=", eventId).executeTakeFirstOrThrow();
}

describe("tenant fairness", () => {
  it("keeps delivering partner B's events while partner A's endpoints tarpit every request", async () => {
    // Partner A: three endpoints that accept the connection and never answer in time.
    const tarpit = await receiver({ responder: () => ({ status: 204, delayMs: 60_000 }) });
    const partnerA = await partnerWithEndpoints("tarpit partner", [tarpit.url("/a1"), tarpit.url("/a2"), tarpit.url("/a3")]);
    const honest = await receiver();
    const partnerB = await partnerWithEndpoints("honest partner", [honest.url("/b")]);

    // A's backlog is older than B's events: oldest-first alone would serve A for minutes.
    for (let i = 0; i < 100; i++) await produce(partnerA.id, `ord_a_${i}`);
    const events: { id: string }[] = [];
    for (let i = 0; i < 5; i++) events.push(await produce(partnerB.id, `ord_b_${i}`));

    startDispatcher();
    await waitFor(
      async () => (events.every((event) => honest.acknowledged.some((r) => r.eventId === event.id)) ? true : undefined),
      {
        timeoutMs: 30_000,
        what: "partner B's five events",
      },
    );
    // Counted in requests, not seconds: B was served while A's tarpit had taken only a
    // few of the 300 deliveries it is owed (32 or more, before the caps, in the first round).
    console.log(`partner A's tarpit held ${tarpit.received.length} request(s) when partner B's 5 events were all delivered`);
    expect(tarpit.received.length).toBeLessThanOrEqual(baseOptions.perPartnerConcurrency);
    const leased = await store
      .selectFrom("webhook_delivery")
      .select(["endpoint_id"])
      .select((eb) => eb.fn.countAll<number>().as("leased"))
      .where("partner_id", "=", partnerA.id)
      .where("locked_until", ">=", Date.now())
      .groupBy("endpoint_id")
      .execute();
    for (const row of leased) expect(Number(row.leased)).toBeLessThanOrEqual(baseOptions.perEndpointConcurrency);
  }, 60_000);
});

describe("recovery after an outage", () => {
  it("sends every queued delivery as soon as the endpoint answers again, in order per order", async () => {
    const hook = await receiver();
    await hook.close(); // down: connections are refused
    const partner = await partnerWithEndpoints("recovering partner", [hook.url()]);

    const first = await produce(partner.id, "ord_1"); // order 1: two events, the second waits for the first
    const second = await produce(partner.id, "ord_1");
    const others = [await produce(partner.id, "ord_2"), await produce(partner.id, "ord_3")];

    // Production-like backoff: after a failure the next try is up to ten minutes away.
    startDispatcher({ retryBaseMs: 600_000, retryMaxDelayMs: 600_000 });
    for (const event of [first, ...others]) {
      await waitFor(async () => ((await deliveryOf(event.id)).attempt_count >= 1 ? true : undefined), {
        what: `a failed attempt of ${event.id}`,
      });
    }
    expect((await deliveryOf(second.id)).attempt_count).toBe(0);

    await hook.listen();
    // A new event is due at once; its success tells the dispatcher the endpoint is back.
    const probe = await produce(partner.id, "ord_4");
    const all = [first, second, ...others, probe];
    await waitFor(async () => (all.every((event) => hook.acknowledged.some((r) => r.eventId === event.id)) ? true : undefined), {
      timeoutMs: 60_000,
      what: "every queued event after the recovery",
    });
    const order1 = hook.acknowledged.filter((r) => r.eventId === first.id || r.eventId === second.id).map((r) => r.eventId);
    expect(order1).toEqual([first.id, second.id]);
    for (const event of all) {
      await waitFor(async () => ((await deliveryOf(event.id)).status === "delivered" ? true : undefined), {
        what: `${event.id} recorded as delivered`,
      });
    }
  }, 120_000);
});

/** The secret box of the key file this file's setup writes. */
function secretBox() {
  return createSecretBox(readSecretsKeyFile(process.env.SECRETS_KEY_FILE as string));
}
