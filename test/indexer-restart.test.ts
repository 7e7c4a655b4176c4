import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, erc20Abi, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardSyncCache, NEW_INDEX_MARKER } from "../api/indexed/sync-cache-guard.js";
import { startAnvil } from "../local/anvil.js";
import type { PonderProcess } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { type CreatedSession, createSession, readSession, sessionBody, submitHash } from "./support/checkout-helpers.js";
import { type LargeLogsProxy, startLargeLogsProxy } from "./support/large-logs-proxy.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Issue 30: while the indexer restarts or backfills, the API keeps answering (a
// retryable 503 with Retry-After where the index is needed and not ready, never a
// hang or a 500), and nothing submitted meanwhile is lost.
let stack: TestStack;
let proxy: LargeLogsProxy;

beforeAll(async () => {
  const anvilPort = await findFreePort();
  proxy = await startLargeLogsProxy(() => `http://127.0.0.1:${anvilPort}`, { maxSpan: Number.POSITIVE_INFINITY });
  // The embedded index: its RPC cache is what lets a restart resume without fetching again.
  stack = await startTestStack({ anvilPort, index: "embedded", env: { LOCAL_RPC_URL: proxy.url } });
}, 180_000);
afterAll(async () => {
  proxy?.releaseLogs();
  await stack?.stop();
  await proxy?.stop();
});

async function pay(session: CreatedSession): Promise<Hex> {
  const hash = await stack.wallet(2).writeContract({
    address: session.payment.tokenAddress,
    abi: erc20Abi,
    functionName: "transfer",
    args: [session.payment.recipient as Address, BigInt(session.payment.amount)],
    chain: stack.chain,
    account: stack.wallet(2).account!,
  });
  await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  return hash;
}

const settled = (id: string) => async () => {
  const session = await readSession(stack, id).catch(() => undefined);
  return session?.status === "settled" ? session : undefined;
};

/** What an answer was, in the terms the issue asks about. */
async function answer(response: Response) {
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body };
}

/** A 2xx, or a retryable 503 that says when to retry: never a 500, never a hang. */
function expectAnsweredOrRetryable(result: { status: number; retryAfter: string | null; body: unknown }, what: string) {
  if (result.status === 503) expect(result.retryAfter, `${what}: Retry-After`).toMatch(/^\d+$/);
  else expect(result.status, `${what}: ${JSON.stringify(result.body)}`).toBeLessThan(300);
}

describe("the API while the indexer backfills", () => {
  it("creates sessions, reads and takes hashes while the backfill is held, and settles the payment made meanwhile", async () => {
    const before = await createSession(stack);
    await pay(before);
    await waitFor(settled(before.id), { timeoutMs: 30_000, what: "the first session to settle" });

    // Blocks below Ponder's 30-block finality make a fresh index a historical backfill,
    // and every eth_getLogs is held: the new indexer's server is up, its index is not.
    await stack.testClient.mine({ blocks: 35 });
    proxy.holdLogs();
    const baseUrl = stack.ponder.baseUrl;
    const restarted: Promise<PonderProcess> = stack.restartService({ DATABASE_SCHEMA: "restart_backfill" });
    restarted.catch(() => undefined);
    await waitFor(
      async () => {
        if (proxy.heldLogs() === 0) return undefined;
        const health = await fetch(`${baseUrl}/v1/health`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
        return health === undefined ? undefined : true;
      },
      { timeoutMs: 120_000, intervalMs: 200, what: "the restarted service to answer while its backfill is held" },
    );
    expect((await fetch(`${baseUrl}/ready`)).status).not.toBe(200);

    const bounded = { signal: AbortSignal.timeout(20_000) };
    const created = await answer(
      await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: sessionBody(), ...bounded }),
    );
    expectAnsweredOrRetryable(created, "session creation during the backfill");
    const readBefore = await answer(await stack.partnerFetch(`/v1/checkout/sessions/${before.id}`, bounded));
    expectAnsweredOrRetryable(readBefore, "reading a settled session during the backfill");
    if (readBefore.status === 200) expect(readBefore.body.status).toBe("settled");

    // Paid while the index is held: the hash is taken (pending) or refused as retryable, and
    // the payment settles once the index reaches it.
    const during = created.status === 201 ? (created.body as unknown as CreatedSession) : await createSession(stack);
    const hash = await pay(during);
    const submitted = await answer(await submitHash(stack, during.clientToken, hash));
    expectAnsweredOrRetryable(submitted, "hash submission during the backfill");
    if (submitted.status === 200) expect(submitted.body.status).toBe("payment_pending");
    else expect(submitted.body.code).toBe("index_not_ready");
    const read = await answer(await stack.partnerFetch(`/v1/checkout/sessions/${during.id}`, bounded));
    expectAnsweredOrRetryable(read, "reading the new session during the backfill");

    proxy.releaseLogs();
    await restarted;
    await waitFor(settled(during.id), { timeoutMs: 60_000, what: "the payment made during the backfill to settle" });
    const again = await answer(await submitHash(stack, during.clientToken, hash));
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("settled");
    expect(stack.serviceRestarts()).toBe(0);
  }, 300_000);
});

/** The settlement workers' heartbeats, by instance (`settlement@host:pid`), from `/v1/health`. */
async function settlementBeats(): Promise<Map<string, number>> {
  const response = await fetch(`${stack.ponder.baseUrl}/v1/health`, { signal: AbortSignal.timeout(5_000) }).catch(
    () => undefined,
  );
  if (response === undefined) return new Map();
  const body = (await response.json().catch(() => ({}))) as { workers?: { worker: string; lastBeatAt: string }[] };
  return new Map(
    (body.workers ?? [])
      .filter((beat) => beat.worker.startsWith("settlement@"))
      .map((beat) => [beat.worker, Date.parse(beat.lastBeatAt)]),
  );
}

describe("a payment still confirming while the index is rewound (issue 42)", () => {
  it("stays payment_pending while the restarted index is below its block, and settles once the index is back", async () => {
    // Five confirmations keep a payment pending on this chain, which mines only on demand.
    const env = { DATABASE_SCHEMA: "restart_backfill", LOCAL_CONFIRMATIONS: "5" };
    await stack.restartService(env);
    const session = await createSession(stack);
    const hash = await pay(session);
    await waitFor(async () => ((await readSession(stack, session.id)).status === "payment_pending" ? true : undefined), {
      timeoutMs: 30_000,
      what: "the payment to be recorded as pending",
    });

    // A restart on the same schema is Ponder's crash recovery: the rows of the unfinalised
    // blocks (the payment's among them) are reverted, and with every eth_getLogs held the
    // index stays below the payment's block while the new process' workers run.
    const before = new Set((await settlementBeats()).keys());
    proxy.holdLogs();
    const restarted = stack.restartService(env);
    restarted.catch(() => undefined);
    // Two heartbeats of the new process' settlement worker are five seconds of its passes.
    let firstBeat: { id: string; at: number } | undefined;
    await waitFor(
      async () => {
        const beats = await settlementBeats();
        firstBeat ??= [...beats].map(([id, at]) => ({ id, at })).find((beat) => !before.has(beat.id));
        return firstBeat !== undefined && beats.get(firstBeat.id)! > firstBeat.at ? true : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 200, what: "the restarted settlement worker to run for a while on the rewound index" },
    );
    expect(proxy.heldLogs(), "the index is still held below the payment").toBeGreaterThan(0);
    const during = await stack.partnerFetch(`/v1/checkout/sessions/${session.id}`);
    expect(((await during.json()) as { status: string }).status).toBe("payment_pending");
    // The order is still being paid: a new session for it is refused, not a second request for money.
    const again = await stack.partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: sessionBody({ externalOrderId: session.externalOrderId }),
    });
    expect(((await again.json()) as { code?: string }).code).toBe("payment_in_progress");

    proxy.releaseLogs();
    await restarted;
    await stack.testClient.mine({ blocks: 5 });
    await waitFor(settled(session.id), { timeoutMs: 60_000, what: "the pending payment to settle once the index is back" });
    const payments = (await (await stack.partnerFetch("/v1/payments?limit=10")).json()) as {
      data: { transactionHash: string; status: string }[];
    };
    expect(payments.data.filter((payment) => payment.transactionHash === hash).map((payment) => payment.status)).toEqual([
      "settled",
    ]);

    // What does take a pending payment away: the chain dropping its transaction.
    const dropped = await createSession(stack);
    await pay(dropped);
    await waitFor(async () => ((await readSession(stack, dropped.id)).status === "payment_pending" ? true : undefined), {
      timeoutMs: 30_000,
      what: "the second payment to be recorded as pending",
    });
    await stack.reorg(1);
    await waitFor(async () => ((await readSession(stack, dropped.id)).status === "awaiting_payment" ? true : undefined), {
      timeoutMs: 30_000,
      what: "the session whose payment the chain dropped to await payment again",
    });

    // Back to the configuration the next tests expect.
    await stack.restartService({ DATABASE_SCHEMA: "restart_backfill" });
    expect(stack.serviceRestarts()).toBe(0);
  }, 300_000);
});
/** Ponder's own view of how far its index got on the local chain (`GET /status`). */
async function indexedBlock(): Promise<number | undefined> {
  const response = await fetch(`${stack.ponder.baseUrl}/status`).catch(() => undefined);
  if (response?.status !== 200) return undefined;
  const body = (await response.json()) as Record<string, { block?: { number?: number } }>;
  return body.local?.block?.number;
}

describe("a restart with the same configuration", () => {
  it("resumes from Ponder's RPC cache without asking the node again from the start block, and settles the payment made while it restarted", async () => {
    const before = await createSession(stack);
    const paidHash = await pay(before);
    const settledBefore = await waitFor(settled(before.id), {
      timeoutMs: 30_000,
      what: "a session to settle before the restart",
    });
    const paidIn = Number((await stack.publicClient.getTransactionReceipt({ hash: paidHash })).blockNumber);

    // Ponder stores a block range in its cache once it is final (30 blocks on this chain,
    // written in steps of 30 as the head moves): bury the payment well below that and let
    // the index follow, so the payment's block is in a range the indexer has synced.
    await stack.testClient.mine({ blocks: 100 });
    const head = Number(await stack.publicClient.getBlockNumber());
    await waitFor(async () => ((await indexedBlock()) ?? 0) >= head, { timeoutMs: 60_000, what: "the index to reach the head" });

    const during = await createSession(stack);
    const rangesBefore = proxy.logRanges().length;
    const restarted = stack.restartService({ DATABASE_SCHEMA: "restart_backfill" });
    restarted.catch(() => undefined);
    // Paid while the indexer restarts: on the chain, not yet in any index.
    const hash = await pay(during);
    await restarted;
    const submitted = await answer(await submitHash(stack, during.clientToken, hash));
    expectAnsweredOrRetryable(submitted, "hash submission right after the restart");
    await waitFor(settled(during.id), { timeoutMs: 60_000, what: "the payment made during the restart to settle" });

    // Without the cache a restart asks for every range again from the start block. With it, the
    // range its historical backfill synced is read from the database. (Ranges indexed by the
    // live sync since are asked again on this chain: see docs/operations.md.)
    const asked = proxy.logRanges().slice(rangesBefore);
    const startBlock = stack.deployment.deployBlock;
    const fromStart = asked.filter((range) => range.from <= startBlock);
    expect(fromStart, `eth_getLogs after the restart from the start block ${startBlock} (paid in ${paidIn})`).toEqual([]);
    const still = await answer(await stack.partnerFetch(`/v1/checkout/sessions/${before.id}`));
    expect(still.status).toBe(200);
    expect(still.body.status).toBe(settledBefore.status);
    expect(stack.serviceRestarts()).toBe(0);
  }, 300_000);

  it("does not trust the cache of a chain the node no longer has (a local chain rebuilt under the same chain id)", async () => {
    // Stop the service for good (a configuration that cannot start leaves nothing to supervise):
    // PGlite's directory is opened by one process at a time.
    await stack.restartService({ NETWORKS: "none-such" }).then(
      (service) => service.stop(),
      () => undefined,
    );
    const database = { pgliteDirectory: join(stack.dataDir, "ponder"), indexSchema: "restart_backfill" };
    const network = { name: "local" as const, chainId: stack.local.chainId };

    const same = await guardSyncCache({ ...database, networks: [{ ...network, rpcUrl: stack.local.rpcUrl }] });
    expect(same).toEqual([expect.objectContaining({ chainId: network.chainId, state: "valid" })]);

    const rebuilt = await startAnvil({ chainId: stack.local.chainId });
    try {
      const stale = await guardSyncCache({ ...database, networks: [{ ...network, rpcUrl: rebuilt.rpcUrl }] });
      expect(stale).toEqual([expect.objectContaining({ chainId: network.chainId, state: "stale" })]);
      // Deleted: the next start finds nothing to resume from and indexes the new chain afresh.
      const after = await guardSyncCache({ ...database, networks: [{ ...network, rpcUrl: rebuilt.rpcUrl }] });
      expect(after).toEqual([{ chainId: network.chainId, state: "empty" }]);

      // A directory still marked as a copy of an empty index is not opened at all, once: the
      // marker goes with that start, and the next start checks the cache again.
      const marker = join(database.pgliteDirectory, NEW_INDEX_MARKER);
      writeFileSync(marker, "");
      expect(await guardSyncCache({ ...database, networks: [{ ...network, rpcUrl: rebuilt.rpcUrl }] })).toEqual([]);
      expect(existsSync(marker)).toBe(false);
      const checked = await guardSyncCache({ ...database, networks: [{ ...network, rpcUrl: rebuilt.rpcUrl }] });
      expect(checked).toEqual([{ chainId: network.chainId, state: "empty" }]);
    } finally {
      await rebuilt.stop();
    }
  }, 120_000);
});
