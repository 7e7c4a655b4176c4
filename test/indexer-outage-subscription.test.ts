import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSessions, expectEverySettledOnce, type Health, payThroughOutage, readHealth } from "./support/chain-outage.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// Issue 19 in subscription mode: Anvil mines a block every second and the indexer
// hears of new blocks over its WebSocket (`eth_subscribe("newHeads")`).
let stack: TestStack;
let store: Store;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack({ blockTime: 1, env: { INDEXER_STALL_TIMEOUT_MS: "10000", PONDER_LOG_LEVEL: "debug" } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  receiver = await startWebhookReceiver();
  const endpoint = await stack.partnerFetch("/v1/webhook-endpoints", {
    method: "POST",
    json: { url: receiver.url("/hooks"), events: ["purchase.settled"] },
  });
  expect(endpoint.status).toBe(201);
}, 180_000);
afterAll(async () => {
  await receiver?.close();
  await store?.destroy();
  await stack?.stop();
});

describe("a chain node that stops answering for 30 s while payments are in flight (subscription)", () => {
  it("reports the outage in health, then settles every payment exactly once and delivers every event", async () => {
    await waitFor(async () => (stack.ponder.output().includes("Created JSON-RPC WebSocket connection") ? true : undefined), {
      what: "the indexer's WebSocket subscription",
    });
    const sessions = await createSessions(stack);
    let duringOutage: Health | undefined;
    const hashes = await payThroughOutage(stack, sessions, {
      during: async () => {
        duringOutage = await waitFor(
          async () => {
            const health = await readHealth(stack).catch(() => undefined);
            return health?.httpStatus === 503 && health.body.reasons.some((reason) => reason.code === "rpc_unavailable")
              ? health.body
              : undefined;
          },
          { timeoutMs: 15_000, what: "health to report the node" },
        );
      },
    });
    expect(duringOutage?.status).toBe("degraded");

    await expectEverySettledOnce({ stack, store, sessions, hashes, receiver });
    const after = await waitFor(
      async () => {
        const health = await readHealth(stack).catch(() => undefined);
        return health?.httpStatus === 200 ? health.body : undefined;
      },
      { timeoutMs: 30_000, what: "health ok after the outage" },
    );
    expect(after.reasons).toEqual([]);
    expect(stack.serviceRestarts()).toBe(0);
    expect(stack.ponder.output()).not.toContain("Created JSON-RPC polling subscription");
  }, 180_000);
});
