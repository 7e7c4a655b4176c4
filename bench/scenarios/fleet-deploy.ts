import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { type Address, createWalletClient, erc20Abi, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { localChain } from "../../local/deploy.js";
import { type PonderProcess, startPlainReplica, startPonder } from "../../local/ponder-process.js";
import { findFreePort } from "../../local/ports.js";
import { startPostgresServer } from "../../local/postgres-server.js";
import { jsonRpc } from "../support/json-rpc.js";
import { PROJECT_ROOT } from "../support/processes.js";
import { type CreatedSession, sessionBody, startBenchStack } from "../support/service-stack.js";
import { sleep } from "../support/stats.js";
import { startBenchReceiver } from "../support/webhook-receiver.js";

export type FleetDeployResult = {
  shape: string;
  reads: number;
  /** Answers with a 5xx status during the deploy, and connections refused or cut (status 0). */
  fiveXx: number;
  refused: number;
  examples: string[];
  payments: number;
  settled: number;
  /** The longest time between two purchase.settled arrivals, from the first to the last payment. */
  longestSettlementGapMs: number | undefined;
  /** The longest send → purchase.settled received. */
  longestSentToSettledMs: number | undefined;
  /** How far the new build's index stood below the chain's head when its /ready first answered 200. */
  newIndexBehindAtReadyBlocks: number | undefined;
  steps: { step: string; atMs: number }[];
  loadAverage: { before: number[]; after: number[] };
};

const VIEWS_SCHEMA = "settlement";

/**
 * A deploy of a new build under load, by docs/deploy.md's steps ("Deploys without downtime"), on
 * one machine: Postgres (index and store), the old build's indexer (`ponder start --schema
 * bench_deploy_v1 --views-schema settlement`) and two plain replicas (`bin/serve-replica.js --schema settlement`,
 * WORKERS=off) behind a round-robin "balancer" in this process; `connections` clients read through
 * the replicas in service while payments keep coming (found by the workers, no hash sent).
 * Step 2 starts the new build's indexer on bench_deploy_v2 and another port, step 3 waits for its
 * /ready, step 4 drains, restarts and puts back each replica in turn, step 5 stops the old indexer.
 * Everything shares the same two cores.
 */
export async function measureFleetDeploy(params: {
  blockTimeS: number;
  confirmations: number;
  connections: number;
  payIntervalMs: number;
  serviceEnv: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<FleetDeployResult> {
  const { log } = params;
  const postgres = await startPostgresServer();
  const replicas: PonderProcess[] = [];
  let nextIndexer: PonderProcess | undefined;
  let stopStack: (() => Promise<void>) | undefined;
  const settledAt = new Map<string, number>();
  const receiver = await startBenchReceiver((event) => {
    const orderId = String(event.data.orderId ?? "");
    if (event.type === "purchase.settled" && !settledAt.has(orderId)) settledAt.set(orderId, event.receivedAt);
  });
  try {
    const bench = await startBenchStack({
      blockTime: params.blockTimeS,
      env: {
        LOCAL_CONFIRMATIONS: String(params.confirmations),
        LOOKUP_RATE_LIMIT: "1000000",
        PUBLIC_RATE_LIMIT: "1000000",
        STORE_URL: await postgres.createDatabase("bench_deploy_store"),
        DATABASE_URL: await postgres.createDatabase("bench_deploy_index"),
        DATABASE_SCHEMA: "bench_deploy_v1",
        DATABASE_VIEWS_SCHEMA: VIEWS_SCHEMA,
        ...params.serviceEnv,
      },
    });
    stopStack = bench.stop;
    const serviceEnv = bench.stack.serviceEnv;
    const replicaEnv = {
      ...Object.fromEntries(Object.entries(serviceEnv).filter(([name]) => name !== "DATABASE_VIEWS_SCHEMA")),
      DATABASE_SCHEMA: VIEWS_SCHEMA,
      WORKERS: "off",
    };
    const startReplica = async (port?: number) =>
      startPlainReplica({ root: PROJECT_ROOT, port: port ?? (await findFreePort()), env: replicaEnv });
    replicas.push(await startReplica(), await startReplica());
    const registration = await bench.partnerFetch("/v1/webhook-endpoints", {
      json: { url: receiver.url, events: ["purchase.settled"] },
    });
    if (registration.status !== 201) throw new Error(`webhook endpoint: ${registration.status}`);
    receiver.setSecret(((await registration.json()) as { secret: string }).secret);
    const auth = { Authorization: `Bearer ${bench.stack.local.partner.apiKey}` };

    // The balancer: round robin over the replicas in service, counting requests under way per replica.
    const inService: PonderProcess[] = [...replicas];
    const inFlight = new Map<string, number>();
    let turn = 0;
    const pick = () => inService[turn++ % inService.length]!;
    const examples: string[] = [];
    let reads = 0;
    let fiveXx = 0;
    let refused = 0;
    const call = async (path: string, init: { json?: unknown; partner?: boolean } = {}) => {
      const replica = pick();
      inFlight.set(replica.baseUrl, (inFlight.get(replica.baseUrl) ?? 0) + 1);
      try {
        const response = await fetch(`${replica.baseUrl}${path}`, {
          method: init.json === undefined ? "GET" : "POST",
          headers: {
            ...(init.partner === false ? {} : auth),
            ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
          },
          body: init.json === undefined ? undefined : JSON.stringify(init.json),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await response.text();
        if (response.status >= 500) {
          fiveXx++;
          if (examples.length < 5) examples.push(`${response.status} ${path} ${text.slice(0, 160)}`);
        }
        return { status: response.status, text };
      } catch (error) {
        refused++;
        if (examples.length < 5) examples.push(`refused ${path} ${String(error).slice(0, 160)}`);
        return { status: 0, text: "" };
      } finally {
        inFlight.set(replica.baseUrl, inFlight.get(replica.baseUrl)! - 1);
      }
    };

    const runId = randomUUID().slice(0, 8);
    const created = await call("/v1/checkout/sessions", { json: sessionBody(runId) });
    if (created.status !== 201) throw new Error(`create session: ${created.status} ${created.text}`);
    const reference = JSON.parse(created.text) as CreatedSession;
    let loading = true;
    const readers = Array.from({ length: params.connections }, async (_, index) => {
      for (let n = index; loading; n++) {
        if (n % 2 === 0) await call(`/v1/checkout/sessions/${reference.id}`);
        else
          await call(`/v1/public/checkout/sessions/${reference.id}/validate`, {
            json: { clientToken: reference.clientToken },
            partner: false,
          });
        reads++;
      }
    });

    const chain = localChain({ rpcUrl: bench.anvilUrl, chainId: bench.stack.local.chainId });
    const payers = bench.stack.local.accounts
      .slice(1, 5)
      .map((account) =>
        createWalletClient({ account: privateKeyToAccount(account.privateKey as Hex), chain, transport: http(bench.anvilUrl) }),
      );
    const sent: { orderId: string; sentAt: number }[] = [];
    let paying = true;
    const payer = (async () => {
      for (let n = 0; paying; n++) {
        const started = performance.now();
        const answer = await call("/v1/checkout/sessions", { json: sessionBody(runId) });
        if (answer.status === 201) {
          const session = JSON.parse(answer.text) as CreatedSession;
          const wallet = payers[n % payers.length]!;
          await wallet.writeContract({
            address: session.payment.tokenAddress as Address,
            abi: erc20Abi,
            functionName: "transfer",
            args: [session.payment.recipient as Address, BigInt(session.payment.amount)],
            chain,
            account: wallet.account!,
          });
          sent.push({ orderId: session.orderId, sentAt: performance.now() });
        }
        const wait = params.payIntervalMs - (performance.now() - started);
        if (wait > 0) await sleep(wait);
      }
    })();

    const began = performance.now();
    const steps: { step: string; atMs: number }[] = [];
    const step = (name: string) => {
      steps.push({ step: name, atMs: Math.round(performance.now() - began) });
      log(`  fleet deploy: ${name} at +${((performance.now() - began) / 1000).toFixed(1)} s`);
    };
    const waitUntil = async (what: string, done: () => boolean | Promise<boolean>, timeoutMs = 120_000) => {
      const deadline = performance.now() + timeoutMs;
      while (!(await done())) {
        if (performance.now() > deadline) throw new Error(`fleet deploy: timed out waiting for ${what}`);
        await sleep(50);
      }
    };
    const before = loadavg();
    let newIndexBehindAtReadyBlocks: number | undefined;
    try {
      await waitUntil("a payment settled under the old build", () => settledAt.size > 0);
      step("old build settling; step 2: the new build's indexer started");
      nextIndexer = await startPonder({
        root: PROJECT_ROOT,
        port: await findFreePort(),
        env: { ...serviceEnv, DATABASE_SCHEMA: "bench_deploy_v2" },
        readyTimeoutMs: 300_000,
      });
      const head = Number(await jsonRpc(bench.anvilUrl)("eth_blockNumber", []));
      const status = (await (await fetch(`${nextIndexer.baseUrl}/status`)).json()) as Record<
        string,
        { block?: { number?: number } }
      >;
      const indexed = Math.max(...Object.values(status).map((chainStatus) => chainStatus.block?.number ?? -1));
      newIndexBehindAtReadyBlocks = indexed < 0 ? undefined : head - indexed;
      step(`step 3: the new indexer's /ready (${newIndexBehindAtReadyBlocks ?? "?"} blocks behind the head)`);
      for (let round = 0; round < replicas.length; round++) {
        const old = inService.shift()!;
        await waitUntil("the drained replica's requests answered", () => (inFlight.get(old.baseUrl) ?? 0) === 0);
        await old.stop();
        const fresh = await startReplica(old.port);
        replicas[replicas.indexOf(old)] = fresh;
        inService.push(fresh);
        step(`step 4: replica ${round + 1} replaced`);
      }
      await bench.stack.stopService();
      step("step 5: the old indexer stopped");
      const settledThen = settledAt.size;
      await waitUntil("a payment settled by the new build's workers", () => settledAt.size > settledThen);
      step("a payment settled by the new build");
    } finally {
      paying = false;
      await payer;
      loading = false;
      await Promise.all(readers);
    }
    await waitUntil("every payment settled", () => sent.every((payment) => settledAt.has(payment.orderId)), 60_000).catch(
      (error: Error) => log(`  ${error.message}`),
    );
    const after = loadavg();
    const arrivals = sent
      .map((payment) => settledAt.get(payment.orderId))
      .filter((time): time is number => time !== undefined)
      .sort((a, b) => a - b);
    const gaps = arrivals.slice(1).map((time, index) => time - arrivals[index]!);
    const latencies = sent
      .filter((payment) => settledAt.has(payment.orderId))
      .map((payment) => settledAt.get(payment.orderId)! - payment.sentAt);
    const round2 = (values: number[]) => values.map((value) => Math.round(value * 100) / 100);
    const result: FleetDeployResult = {
      shape: `throw-away Postgres on loopback (index and store), the old and the new build's indexers (ponder start --views-schema settlement), two plain replicas (bin/serve-replica.js --schema settlement, WORKERS=off), ${params.connections} reading clients and a payment every ${params.payIntervalMs} ms through a round-robin balancer in the bench; Anvil mining a block every ${params.blockTimeS} s; everything on the same two cores`,
      reads,
      fiveXx,
      refused,
      examples,
      payments: sent.length,
      settled: latencies.length,
      longestSettlementGapMs: gaps.length === 0 ? undefined : Math.round(Math.max(...gaps)),
      longestSentToSettledMs: latencies.length === 0 ? undefined : Math.round(Math.max(...latencies)),
      newIndexBehindAtReadyBlocks,
      steps,
      loadAverage: { before: round2(before), after: round2(after) },
    };
    log(
      `  fleet deploy: ${reads} reads, ${fiveXx} 5xx, ${refused} refused; ${result.settled}/${result.payments} settled; longest gap between settlements ${result.longestSettlementGapMs ?? "-"} ms, longest send → settled ${result.longestSentToSettledMs ?? "-"} ms; load average ${result.loadAverage.before.join(" ")} → ${result.loadAverage.after.join(" ")}`,
    );
    return result;
  } finally {
    await Promise.allSettled([...replicas.map((replica) => replica.stop()), nextIndexer?.stop()]);
    await stopStack?.();
    await receiver.close();
    await postgres.stop();
  }
}
