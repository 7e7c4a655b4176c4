import { type Address, erc20Abi, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  stack = await startTestStack({ anvilPort, env: { LOCAL_RPC_URL: proxy.url } });
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
function expectAnsweredOrRetryable(result: { status: number; retryAfter: string | null }, what: string) {
  if (result.status === 503) expect(result.retryAfter, `${what}: Retry-After`).toMatch(/^\d+$/);
  else expect(result.status, what).toBeLessThan(300);
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
