import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findFreePort } from "../local/ports.js";
import { createSession, readSession } from "./support/checkout-helpers.js";
import { type RpcGate, startRpcGate } from "./support/rpc-gate.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

/**
 * Ponder 0.16.10 gives up a new head whose data it failed to fetch and takes it up
 * again only when a newer head arrives. A local chain mines only when someone
 * transacts, so a payment in that head would wait for the stall restart (two
 * minutes); the watchdog mines an empty block instead (api/indexed/indexer-watchdog.ts).
 */
let stack: TestStack;
let gate: RpcGate;

beforeAll(async () => {
  const anvilPort = await findFreePort();
  gate = await startRpcGate(() => `http://127.0.0.1:${anvilPort}`);
  stack = await startTestStack({ anvilPort, env: { LOCAL_RPC_URL: gate.url } });
});
afterAll(async () => {
  await stack?.stop();
  await gate?.stop();
});

describe("a head the indexer gave up", () => {
  it("settles the payment in it on a chain that mines nothing more, without the stall restart", async () => {
    const session = await createSession(stack, { certificate: { enabled: false } });
    const refused = gate.refuseNextBlockLogs();
    const paid = await stack.payUsdc({ from: 2, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    const block = await stack.publicClient.getBlock({ blockNumber: paid.blockNumber });
    // The indexer's fetch of exactly the payment's block was the one refused.
    expect(await refused).toBe(block.hash);
    const settled = await waitFor(
      async () => {
        const current = await readSession(stack, session.id);
        return current.status === "settled" ? current : undefined;
      },
      { timeoutMs: 60_000, what: "the session settled after the dropped head" },
    );
    expect(settled.status).toBe("settled");
    // Settled by the block the watchdog mined, not by a restart of the indexer.
    expect(await stack.publicClient.getBlockNumber({ cacheTime: 0 })).toBeGreaterThan(paid.blockNumber);
    expect(stack.ponder.output()).toContain("mining an empty block");
    expect(stack.ponder.output()).not.toContain("Indexer stalled");
  });
});
