import { type Address, createPublicClient, type Hex, parseAbiItem } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexerTransport } from "../api/indexed/indexer-transport.js";
import { findFreePort } from "../local/ports.js";
import { type LargeLogsProxy, startLargeLogsProxy } from "./support/large-logs-proxy.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// Issue 30: one eth_getLogs answer over viem's 10 MiB limit (ResponseBodyTooLargeError)
// made Ponder shut down (exit 75) and the index never started. Here every answer for a
// range wider than 4 blocks is over the limit, as a busy address's backfill on Base.
const MAX_SPAN = 4;
let stack: TestStack;
let proxy: LargeLogsProxy;
let anvilPort: number;

beforeAll(async () => {
  anvilPort = await findFreePort();
  proxy = await startLargeLogsProxy(() => `http://127.0.0.1:${anvilPort}`, { maxSpan: MAX_SPAN });
  stack = await startTestStack({ anvilPort, env: { LOCAL_RPC_URL: proxy.url } });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});

const transferEvent = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

async function indexedHashes(baseUrl: string, to: Address): Promise<string[]> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query: "{ usdcTransfers(limit: 1000) { items { transactionHash to } } }" }),
  });
  const body = (await response.json()) as { data: { usdcTransfers: { items: { transactionHash: string; to: string }[] } } };
  return body.data.usdcTransfers.items
    .filter((item) => item.to.toLowerCase() === to.toLowerCase())
    .map((item) => item.transactionHash.toLowerCase());
}

describe("eth_getLogs answers over the response limit", () => {
  const paid: Hex[] = [];
  const paymentAddress = () => stack.local.partner.paymentAddress as Address;

  it("the indexer's transport splits a too-large range and merges the halves into the node's exact answer", async () => {
    for (let i = 0; i < 3; i++) {
      paid.push((await stack.payUsdc({ from: 1, to: paymentAddress(), amount: 1_000_000n + BigInt(i) })).hash);
      await stack.testClient.mine({ blocks: 3 });
    }
    const head = await stack.publicClient.getBlockNumber();
    const filter = {
      address: stack.local.contracts.usdc as Address,
      event: transferEvent,
      fromBlock: 0n,
      toBlock: head,
    };
    const direct = await stack.publicClient.getLogs(filter);
    const before = proxy.oversized();
    const throughProxy = createPublicClient({ transport: indexerTransport(proxy.url, { log: () => undefined }) });
    const split = await throughProxy.getLogs(filter);
    expect(proxy.oversized()).toBeGreaterThan(before);
    expect(split.map((entry) => `${entry.blockNumber}:${entry.logIndex}`)).toEqual(
      direct.map((entry) => `${entry.blockNumber}:${entry.logIndex}`),
    );
    expect(split.length).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it("a backfill whose eth_getLogs answers exceed the limit still completes with every transfer (no exit 75)", async () => {
    // Bury the payments below Ponder's 30-block finality so a fresh index reads them by range.
    await stack.testClient.mine({ blocks: 40 });
    const before = proxy.oversized();
    // A fresh schema: the whole range is a historical backfill through the proxy.
    const service = await stack.restartService({ DATABASE_SCHEMA: "large_answers" });
    const hashes = await indexedHashes(service.baseUrl, paymentAddress());
    for (const hash of paid) expect(hashes).toContain(hash.toLowerCase());
    expect(proxy.oversized()).toBeGreaterThan(before);
    expect(service.process.exitCode).toBeNull();
    expect(stack.serviceRestarts()).toBe(0);
    expect(service.output()).toContain("eth_getLogs answer over the response limit");
  }, 180_000);
});
