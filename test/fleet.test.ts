import pg from "pg";
import { type Address, erc20Abi, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaBehindViews } from "../api/config/startup.js";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { type PonderProcess, startPlainReplica, startPonder } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { type PostgresServer, startPostgresServer } from "../local/postgres-server.js";
import { type CreatedSession, sessionBody } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// One fleet as docs/deploy.md runs it, shared by every case: Postgres holding the index and the
// store, an indexer (`ponder start --schema settlement_v1 --views-schema settlement`, with the
// workers) and two API replicas (the plain Hono server, `npm run serve:replica`, on the views schema
// `settlement`, WORKERS=off; docs/architecture.md, "Why replicas are a plain Hono server"). Every request
// goes to a replica, as behind a load balancer; the indexer is asked nothing. The Postgres server
// is this file's own: a case restarts it.

const VIEWS_SCHEMA = "settlement";
/** The deploy case's payer starts one payment this often at most: a steady flow, not a flood. */
const PAYMENT_EVERY_MS = 200;

let server: PostgresServer;
let storeUrl: string;
let indexUrl: string;
let stack: TestStack;
let receiver: WebhookReceiver;
/** The replicas a load balancer would send requests to now (one taken out while it is replaced). */
const replicas: PonderProcess[] = [];
/** A second indexer started by the deploy case, stopped at the end. */
let nextIndexer: PonderProcess | undefined;

async function query(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

function replicaEnv(): NodeJS.ProcessEnv {
  // A replica reads the views schema and indexes nothing: the indexer's views setting is not its own.
  const env = Object.fromEntries(Object.entries(stack.serviceEnv).filter(([name]) => name !== "DATABASE_VIEWS_SCHEMA"));
  return { ...env, DATABASE_SCHEMA: VIEWS_SCHEMA, WORKERS: "off" };
}

async function startReplica(port?: number): Promise<PonderProcess> {
  return startPlainReplica({ root: PROJECT_ROOT, port: port ?? (await findFreePort()), env: replicaEnv() });
}

/** Requests under way per process, so that a replica is taken out of service only once it has none. */
const inFlight = new Map<string, number>();

type Answer = { status: number; body: Record<string, unknown>; retryAfter: string | null; url: string };

/** One request to a process of the fleet; a refused or cut connection answers status 0. */
async function call(
  baseUrl: string,
  path: string,
  init: { method?: string; json?: unknown; partner?: boolean } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.partner !== false) headers.Authorization = `Bearer ${stack.local.partner.apiKey}`;
  if (init.json !== undefined) headers["Content-Type"] = "application/json";
  inFlight.set(baseUrl, (inFlight.get(baseUrl) ?? 0) + 1);
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method: init.method ?? (init.json === undefined ? "GET" : "POST"),
      headers,
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { text: text.slice(0, 200) };
    }
    return { status: response.status, body, retryAfter: response.headers.get("retry-after"), url: `${baseUrl}${path}` };
  } catch (error) {
    return { status: 0, body: { error: String(error) }, retryAfter: null, url: `${baseUrl}${path}` };
  } finally {
    inFlight.set(baseUrl, inFlight.get(baseUrl)! - 1);
  }
}

/** Takes the first replica out of service as a load balancer drains it: no new request, the last one answered. */
async function drainFirstReplica(): Promise<PonderProcess> {
  const replica = replicas.shift()!;
  await waitFor(async () => ((inFlight.get(replica.baseUrl) ?? 0) === 0 ? true : undefined), {
    what: `the requests under way on ${replica.baseUrl} answered`,
  });
  return replica;
}

/** The replica the n-th request goes to (round robin over those in service). */
function replicaFor(n: number): PonderProcess {
  return replicas[n % replicas.length]!;
}

async function createSessionOn(replica: PonderProcess): Promise<CreatedSession> {
  const answer = await call(replica.baseUrl, "/v1/checkout/sessions", { json: sessionBody({ certificate: { enabled: false } }) });
  if (answer.status !== 201)
    throw new Error(`create session on ${replica.baseUrl}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as unknown as CreatedSession;
}

function submitOn(replica: PonderProcess, session: CreatedSession, hash: Hex): Promise<Answer> {
  return call(replica.baseUrl, "/v1/public/checkout/payments", {
    json: { clientToken: session.clientToken, transactionHash: hash },
    partner: false,
  });
}

/**
 * What a client may be answered by a fleet under a fault: an answer, or a retryable 503 that says
 * when to come back, for a store that is away or an index that is needed and missing. Never a 500.
 */
function retryableOrAnswered(answer: Answer): string | undefined {
  if (answer.status > 0 && answer.status < 500) return undefined;
  if (
    answer.status === 503 &&
    /^\d+$/.test(answer.retryAfter ?? "") &&
    ["store_unavailable", "index_not_ready", "rpc_unavailable"].includes(String(answer.body.code))
  )
    return undefined;
  return `${answer.url}: ${answer.status} ${JSON.stringify(answer.body)}`;
}

/** Sends each payment without mining it, then mines them in `blocks` blocks: many payments per block. */
async function payInFewBlocks(sessions: CreatedSession[], blocks: number): Promise<Hex[]> {
  const hashes: Hex[] = new Array(sessions.length);
  const perBlock = Math.ceil(sessions.length / blocks);
  await stack.testClient.setAutomine(false);
  try {
    for (let start = 0; start < sessions.length; start += perBlock) {
      const batch = sessions.slice(start, start + perBlock);
      // Six payers, each sending its own payments one after another (their nonces follow the pool).
      await Promise.all(
        [0, 1, 2, 3, 4, 5].map(async (payer) => {
          for (let index = payer; index < batch.length; index += 6) {
            const session = batch[index]!;
            const wallet = stack.wallet(4 + payer);
            hashes[start + index] = await wallet.writeContract({
              address: stack.local.contracts.usdc as Address,
              abi: erc20Abi,
              functionName: "transfer",
              args: [session.payment.recipient, BigInt(session.payment.amount)],
              chain: stack.chain,
              account: wallet.account!,
            });
          }
        }),
      );
      await stack.testClient.mine({ blocks: 1 });
    }
  } finally {
    await stack.testClient.setAutomine(true);
  }
  for (const hash of hashes) await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  return hashes;
}

async function sessionStatus(session: CreatedSession, n = 0): Promise<string | undefined> {
  const answer = await call(replicaFor(n).baseUrl, `/v1/checkout/sessions/${session.id}`);
  return answer.status === 200 ? String(answer.body.status) : undefined;
}

async function waitAllSettled(sessions: CreatedSession[], what: string): Promise<void> {
  await waitFor(
    async () => {
      const statuses = await Promise.all(sessions.map((session, n) => sessionStatus(session, n)));
      return statuses.every((status) => status === "settled") ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200, what },
  );
}

/** The purchase.settled events the store recorded, by order id. */
async function settledEventsByOrder(): Promise<Map<string, { id: string; transactionHash: string }[]>> {
  const rows = await query(storeUrl, "select id, payload from event where type = 'purchase.settled'");
  const byOrder = new Map<string, { id: string; transactionHash: string }[]>();
  for (const row of rows) {
    const data = (JSON.parse(String(row.payload)) as { data: { orderId: string; transactionHash: string } }).data;
    byOrder.set(data.orderId, [
      ...(byOrder.get(data.orderId) ?? []),
      { id: String(row.id), transactionHash: data.transactionHash },
    ]);
  }
  return byOrder;
}

function settledHooks(orderId: string) {
  return receiver.received.filter(
    (hook) => hook.type === "purchase.settled" && JSON.parse(hook.rawBody.toString()).data.orderId === orderId,
  );
}

/**
 * Exactly-once settlement and at-least-once delivery with one outcome per order: one recorded
 * purchase.settled per order, for the hash that paid it, acknowledged at least once, and every
 * delivery of it the same event with the same body.
 */
async function expectSettledOnceAndDelivered(sessions: CreatedSession[], hashes: Hex[]): Promise<void> {
  const events = await settledEventsByOrder();
  for (const [index, session] of sessions.entries()) {
    expect(events.get(session.orderId), session.orderId).toEqual([expect.objectContaining({ transactionHash: hashes[index] })]);
  }
  await waitFor(
    async () =>
      sessions.every((session) => receiver.acknowledged.some((hook) => settledHooks(session.orderId).includes(hook)))
        ? true
        : undefined,
    { timeoutMs: 60_000, what: "purchase.settled acknowledged for every order" },
  );
  for (const session of sessions) {
    const hooks = settledHooks(session.orderId);
    expect(new Set(hooks.map((hook) => hook.eventId)), session.orderId).toEqual(new Set([events.get(session.orderId)![0]!.id]));
    expect(new Set(hooks.map((hook) => hook.rawBody.toString())).size, session.orderId).toBe(1);
  }
}

beforeAll(async () => {
  server = await startPostgresServer();
  try {
    storeUrl = await server.createDatabase("settlement_store");
    indexUrl = await server.createDatabase("settlement_index");
    stack = await startTestStack({
      env: {
        STORE_URL: storeUrl,
        DATABASE_URL: indexUrl,
        DATABASE_SCHEMA: "settlement_v1",
        DATABASE_VIEWS_SCHEMA: VIEWS_SCHEMA,
        // The cases look up and poll far more often than one customer's browser: the limits are not what is tested.
        LOOKUP_RATE_LIMIT: "1000000",
        PUBLIC_RATE_LIMIT: "1000000",
      },
    });
    receiver = await startWebhookReceiver();
    const endpoint = await stack.partnerFetch("/v1/webhook-endpoints", {
      method: "POST",
      json: { url: receiver.url("/hooks") },
    });
    expect(endpoint.status).toBe(201);
    replicas.push(...(await Promise.all([startReplica(), startReplica()])));
  } catch (error) {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await stack?.stop();
    await server.stop();
    throw error;
  }
}, 240_000);

afterAll(async () => {
  await receiver?.close();
  await Promise.all([...replicas.map((replica) => replica.stop()), nextIndexer?.stop()]);
  await stack?.stop();
  await server?.stop();
}, 60_000);

describe("a fleet: an indexer and two plain replicas on Postgres", () => {
  it("settles 60 payments from six payers in five blocks exactly once, hashes sent to either replica or both at once or not at all, and delivers one purchase.settled per order", async () => {
    const sessions = await Promise.all(Array.from({ length: 60 }, (_, n) => createSessionOn(replicaFor(n))));
    const hashes = await payInFewBlocks(sessions, 5);
    const answers = await Promise.all(
      sessions.map(async (session, n) => {
        const hash = hashes[n]!;
        if (n % 3 === 0) return [await submitOn(replicaFor(n), session, hash)];
        if (n % 3 === 1) return Promise.all(replicas.map((replica) => submitOn(replica, session, hash)));
        return []; // found by the settlement worker in the index
      }),
    );
    for (const answer of answers.flat()) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(["settled", "payment_pending"]).toContain(answer.body.status);
    }
    await waitAllSettled(sessions, "all 60 sessions settled");
    await expectSettledOnceAndDelivered(sessions, hashes);
    // No fault here: once every delivery is recorded done, each order was delivered once.
    await waitFor(
      async () => {
        const rows = await query(
          storeUrl,
          "select count(*)::int as n from webhook_delivery where status not in ('delivered', 'cancelled')",
        );
        return rows[0]!.n === 0 ? true : undefined;
      },
      { what: "every delivery recorded done" },
    );
    for (const session of sessions) expect(settledHooks(session.orderId), session.orderId).toHaveLength(1);
  }, 240_000);

  /**
   * Twelve payments, each in its own block, with a fault after the sixth; every other hash is
   * submitted to a replica in service. Then waits until the fleet is whole again and every session settled.
   */
  let lastMissing: unknown;
  async function flowAcrossFault(fault: () => Promise<void>, recover: () => Promise<void>, label: string) {
    const sessions = await Promise.all(Array.from({ length: 12 }, (_, n) => createSessionOn(replicaFor(n))));
    const hashes: Hex[] = [];
    const problems: string[] = [];
    for (const [n, session] of sessions.entries()) {
      if (n === 6) await fault();
      const paid = await stack.payUsdc({
        from: 4 + (n % 6),
        to: session.payment.recipient,
        amount: BigInt(session.payment.amount),
      });
      hashes.push(paid.hash);
      if (n % 2 === 0) {
        const answer = await submitOn(replicaFor(n), session, paid.hash);
        const problem = retryableOrAnswered(answer);
        if (problem !== undefined) problems.push(problem);
      }
    }
    await recover();
    expect(problems, label).toEqual([]);
    // Every payment reaches the index (a transfer lost there could never settle).
    await waitFor(
      async () => {
        const rows = await query(
          indexUrl,
          `select transaction_hash from ${VIEWS_SCHEMA}.usdc_transfer where transaction_hash in (${hashes.map((hash) => `'${hash}'`).join(",")})`,
        );
        const indexed = new Set(rows.map((row) => String(row.transaction_hash)));
        const missing = await Promise.all(
          hashes
            .filter((hash) => !indexed.has(hash))
            .map(async (hash) => ({
              hash,
              block: String((await stack.publicClient.getTransactionReceipt({ hash })).blockNumber),
            })),
        );
        lastMissing = missing;
        return missing.length === 0 ? true : undefined;
      },
      { timeoutMs: 60_000, what: `${label}: every payment in the index` },
    ).catch((error: Error) => {
      throw new Error(`${error.message.split("\n")[0]}; missing from the index: ${JSON.stringify(lastMissing)}`);
    });
    await waitAllSettled(sessions, `${label}: all 12 sessions settled`);
    await expectSettledOnceAndDelivered(sessions, hashes);
  }

  it("survives a kill -9 of a replica mid-flow: the other answers meanwhile, a new one takes its port", async () => {
    let killed: PonderProcess | undefined;
    await flowAcrossFault(
      async () => {
        killed = replicas.shift()!;
        await killed.stop("SIGKILL");
      },
      async () => {
        replicas.push(await startReplica(killed!.port));
      },
      "replica killed",
    );
  }, 240_000);

  it("survives a kill -9 of the indexer mid-flow: replicas answer reads and hashes of indexed payments, and 503 with Retry-After only where the index is missing", async () => {
    // A payment settled before the crash: its hash is in the index.
    const before = await createSessionOn(replicaFor(0));
    const beforePaid = await stack.payUsdc({ from: 4, to: before.payment.recipient, amount: BigInt(before.payment.amount) });
    await waitAllSettled([before], "the payment before the crash settled");
    const whileDown: Answer[] = [];
    await flowAcrossFault(
      async () => {
        await stack.stopService("SIGKILL");
        for (const replica of replicas) {
          const read = await call(replica.baseUrl, `/v1/checkout/sessions/${before.id}`);
          expect(read.status, JSON.stringify(read.body)).toBe(200);
          expect(read.body.status).toBe("settled");
          const validate = await call(replica.baseUrl, `/v1/public/checkout/sessions/${before.id}/validate`, {
            json: { clientToken: before.clientToken },
            partner: false,
          });
          expect(validate.status, JSON.stringify(validate.body)).toBe(200);
          const order = await call(replica.baseUrl, `/v1/orders/${before.orderId}`);
          expect(order.status, JSON.stringify(order.body)).toBe(200);
          const submitted = await submitOn(replica, before, beforePaid.hash);
          expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
          expect(submitted.body.status).toBe("settled");
        }
      },
      async () => {
        // A payment made while the indexer is down, its hash sent before it is back.
        const late = await createSessionOn(replicaFor(1));
        const paid = await stack.payUsdc({ from: 5, to: late.payment.recipient, amount: BigInt(late.payment.amount) });
        whileDown.push(...(await Promise.all(replicas.map((replica) => submitOn(replica, late, paid.hash)))));
        await stack.restartService();
        await waitAllSettled([late], "the payment made while the indexer was down settled");
        await expectSettledOnceAndDelivered([late], [paid.hash]);
      },
      "indexer killed",
    );
    console.log(
      `fleet: hash of a payment made while the indexer was down: ${whileDown.map((answer) => `${answer.status} ${answer.body.status ?? answer.body.code} retry-after=${answer.retryAfter}`).join("; ")}`,
    );
    for (const answer of whileDown) expect(retryableOrAnswered(answer)).toBeUndefined();
  }, 300_000);

  it("survives a Postgres restart mid-flow: no process exits, and each payment settles once", async () => {
    const restartsBefore = stack.serviceRestarts();
    await flowAcrossFault(
      async () => server.control("restart"),
      async () => {},
      "Postgres restarted",
    );
    for (const replica of replicas) expect(replica.process.exitCode, replica.output().slice(-3000)).toBeNull();
    expect(stack.serviceRestarts(), stack.ponder.output().slice(-3000)).toBe(restartsBefore);
  }, 240_000);

  it("keeps a transfer whose block's COMMIT was cut (the indexer's connection ended at commit, as in a Postgres restart): it is in the index and settles", async () => {
    const session = await createSessionOn(replicaFor(0));
    // Once, while the indexer commits the block holding this payment, its own connection is
    // ended (a deferred trigger runs at COMMIT; a sequence is not rolled back with it).
    await query(
      indexUrl,
      `create sequence public.fleet_commit_fault;
       create function public.fleet_cut_commit() returns trigger language plpgsql as $$
       begin
         if new.value = ${BigInt(session.payment.amount)} and nextval('public.fleet_commit_fault') = 1 then
           perform pg_terminate_backend(pg_backend_pid());
         end if;
         return null;
       end $$;
       create constraint trigger fleet_cut_commit after insert or update on settlement_v1.usdc_transfer
         deferrable initially deferred for each row execute function public.fleet_cut_commit();`,
    );
    try {
      const paid = await stack.payUsdc({ from: 6, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
      await waitFor(
        async () =>
          (await query(indexUrl, "select is_called from public.fleet_commit_fault"))[0]!.is_called === true ? true : undefined,
        { what: "the indexer's commit of the payment's block cut once" },
      );
      await waitFor(
        async () => {
          const rows = await query(
            indexUrl,
            `select 1 from ${VIEWS_SCHEMA}.usdc_transfer where transaction_hash = '${paid.hash}'`,
          );
          return rows.length === 1 ? true : undefined;
        },
        { what: "the payment in the index after its block was indexed again" },
      );
      await waitAllSettled([session], "the payment settled");
      await expectSettledOnceAndDelivered([session], [paid.hash]);
    } finally {
      await query(
        indexUrl,
        `drop trigger fleet_cut_commit on settlement_v1.usdc_transfer; drop function public.fleet_cut_commit(); drop sequence public.fleet_commit_fault;`,
      );
    }
  }, 180_000);

  it("deploys a new build under load as docs/deploy.md says: no 5xx to a client reading throughout, no payment left unsettled", async () => {
    let loading = true;
    const fiveHundreds: string[] = [];
    let reads = 0;
    // A client looping on reads through the replicas in service (a load balancer's view).
    const reference = await createSessionOn(replicaFor(0));
    const began = Date.now();
    const steps: string[] = [];
    const step = (name: string) => steps.push(`${name} +${Date.now() - began} ms`);
    const reader = (async () => {
      for (let n = 0; loading; n++) {
        const replica = replicaFor(n);
        const answer =
          n % 2 === 0
            ? await call(replica.baseUrl, `/v1/checkout/sessions/${reference.id}`)
            : await call(replica.baseUrl, `/v1/public/checkout/sessions/${reference.id}/validate`, {
                json: { clientToken: reference.clientToken },
                partner: false,
              });
        reads++;
        if (answer.status === 0 || answer.status >= 500)
          fiveHundreds.push(`${answer.status} ${answer.url} ${JSON.stringify(answer.body)}`);
      }
    })();
    // Payments flowing throughout, found by the workers (no hash submitted): when each was mined, and first seen settled.
    // One payment started every 200 ms at most, as a shop's steady traffic: a payer sending as fast as it
    // could mined a block per payment without pause, and the new build's indexer, indexing from the first
    // block, chased a head that ran away from it (the case took ~340 s). Payments still flow throughout.
    const paid: { session: CreatedSession; hash: Hex; minedAt: number; settledAt?: number }[] = [];
    const payer = (async () => {
      for (let n = 0, next = Date.now(); loading; n++, next += PAYMENT_EVERY_MS) {
        if (next > Date.now()) await new Promise((resolve) => setTimeout(resolve, next - Date.now()));
        else next = Date.now();
        if (!loading) break;
        const session = await createSessionOn(replicaFor(n));
        const { hash } = await stack.payUsdc({
          from: 4 + (n % 6),
          to: session.payment.recipient,
          amount: BigInt(session.payment.amount),
        });
        paid.push({ session, hash, minedAt: Date.now() });
      }
    })();
    const watcher = (async () => {
      while (loading || paid.some((payment) => payment.settledAt === undefined)) {
        for (const [n, payment] of paid.entries()) {
          if (payment.settledAt === undefined && (await sessionStatus(payment.session, n)) === "settled")
            payment.settledAt = Date.now();
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      await waitFor(async () => (paid.some((payment) => payment.settledAt !== undefined) ? true : undefined), {
        timeoutMs: 60_000,
        what: "a payment settled under the old build",
      });
      step("new indexer started");
      // Step 2: the new build's indexer on a schema of its own, the same views schema, another port.
      nextIndexer = await startPonder({
        root: PROJECT_ROOT,
        port: await findFreePort(),
        env: { ...stack.serviceEnv, DATABASE_SCHEMA: "settlement_v2" },
        readyTimeoutMs: 180_000,
      });
      step("new indexer /ready");
      // Step 3: at its /ready the views read the new build.
      expect(await schemaBehindViews(indexUrl, VIEWS_SCHEMA)).toBe("settlement_v2");
      // Step 4: each replica out of the balancer, stopped, started again on its port, back in.
      for (let round = 0; round < 2; round++) {
        const old = await drainFirstReplica();
        await old.stop();
        replicas.push(await startReplica(old.port));
        step(`replica ${round + 1} replaced`);
      }
      // Step 5: the old indexer stops; the new one's workers take the lease.
      await stack.stopService();
      step("old indexer stopped");
      const settledSoFar = paid.filter((payment) => payment.settledAt !== undefined).length;
      await waitFor(
        async () => (paid.filter((payment) => payment.settledAt !== undefined).length > settledSoFar ? true : undefined),
        { timeoutMs: 60_000, what: "a payment settled by the new build's workers" },
      );
    } finally {
      loading = false;
      await Promise.all([reader, payer]);
    }
    await watcher;
    expect(fiveHundreds, `${fiveHundreds.length} of ${reads} reads`).toEqual([]);
    await expectSettledOnceAndDelivered(
      paid.map((payment) => payment.session),
      paid.map((payment) => payment.hash),
    );
    const latencies = paid.map((payment) => payment.settledAt! - payment.minedAt);
    const slowest = paid[latencies.indexOf(Math.max(...latencies))]!;
    step("end");
    const settledTimes = paid.map((payment) => payment.settledAt!).sort((a, b) => a - b);
    const gaps = settledTimes.slice(1).map((time, index) => time - settledTimes[index]!);
    console.log(
      `fleet deploy under load: ${reads} reads, ${fiveHundreds.length} 5xx; ${paid.length} payments settled; longest mined→settled ${Math.max(...latencies)} ms, longest gap between two settlements ${Math.max(0, ...gaps)} ms; the slowest mined at +${slowest.minedAt - began} ms; steps: ${steps.join(", ")}`,
    );
  }, 480_000);
});
