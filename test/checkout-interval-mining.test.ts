import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSessions, expectEverySettledOnce, type Health, payThroughOutage, readHealth } from "./support/chain-outage.js";
import { createSession, readSession, submitHash } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// Anvil mining a block every second with two confirmations, the indexer on its WebSocket subscription:
// one stack for what were 2 files (checkout-interval-mining, then indexer-outage-subscription, which
// freezes the node), a describe block each reading the stack through sharedStack(). One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack({
    blockTime: 1,
    env: { LOCAL_CONFIRMATIONS: "2", INDEXER_STALL_TIMEOUT_MS: "10000", PONDER_LOG_LEVEL: "debug" },
  });
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("checkout-interval-mining", () => {
  // Anvil mining a block every second, as a real network does, and two confirmations:
  // the indexer subscribes to new blocks over Anvil's WebSocket instead of polling.
  let stack: TestStack;

  beforeAll(async () => {
    stack = sharedStack();
  });

  async function indexedBlock(): Promise<bigint> {
    const health = (await (await fetch(`${stack.ponder.baseUrl}/v1/health`)).json()) as { chains: { indexedBlock: string }[] };
    return BigInt(health.chains[0]!.indexedBlock);
  }

  describe("a chain that mines on an interval", () => {
    it("hears of new blocks by subscription and follows the chain while nobody transacts", async () => {
      // The socket opens once realtime sync begins, which may be just after /ready.
      await waitFor(async () => (stack.ponder.output().includes("Created JSON-RPC WebSocket connection") ? true : undefined), {
        what: "the indexer's WebSocket subscription",
      });
      expect(stack.ponder.output()).not.toContain("Created JSON-RPC polling subscription");
      const start = await indexedBlock();
      await waitFor(async () => ((await indexedBlock()) >= start + 2n ? true : undefined), {
        what: "the index to follow two empty blocks",
      });
    });

    it("settles a payment whose hash nobody submitted once its block has the confirmations", async () => {
      const session = await createSession(stack, { certificate: { enabled: false } });
      const paid = await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
      await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined), {
        what: "the session to settle from the index alone",
      });
      expect(await stack.publicClient.getBlockNumber()).toBeGreaterThanOrEqual(paid.blockNumber + 1n);
      const response = await submitHash(stack, session.clientToken, paid.hash);
      expect(response.status).toBe(200);
      const body = await response.json();
      expect(body).toMatchObject({ status: "settled", transactionHash: paid.hash, requiredConfirmations: 2 });
      expect(body.confirmations).toBeGreaterThanOrEqual(2);
    });
  });
});

describe("indexer-outage-subscription", () => {
  // Issue 19 in subscription mode: Anvil mines a block every second and the indexer
  // hears of new blocks over its WebSocket (`eth_subscribe("newHeads")`).
  let stack: TestStack;
  let store: Store;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    stack = sharedStack();
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
});
