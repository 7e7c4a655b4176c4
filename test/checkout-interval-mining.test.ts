import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession, readSession, submitHash } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Anvil mining a block every second, as a real network does, and two confirmations:
// the indexer subscribes to new blocks over Anvil's WebSocket instead of polling.
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ blockTime: 1, env: { LOCAL_CONFIRMATIONS: "2", PONDER_LOG_LEVEL: "debug" } });
});
afterAll(async () => {
  await stack?.stop();
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
