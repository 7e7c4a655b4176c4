import { type PonderProcess, startPonder } from "../../local/ponder-process.js";
import { findFreePort } from "../../local/ports.js";
import { startPostgresServer } from "../../local/postgres-server.js";
import { type LoadResult, runLoad } from "../support/load.js";
import { startMemorySampler } from "../support/memory.js";
import { PROJECT_ROOT } from "../support/processes.js";
import { startBenchStack } from "../support/service-stack.js";
import type { Summary } from "../support/stats.js";
import { type LatencyResult, measureSettlementLatency } from "./settlement-latency.js";

export type FleetResult = {
  shape: string;
  settlement: { purchases: number; settled: number; overhead: Summary };
  /** Hash submission (hit path: settled payments again) on the replica, per connection count. */
  hashSubmission: LoadResult[];
  /** The customer's status poll, POST /v1/public/checkout/sessions/{id}/validate, on the replica. */
  statusPoll: LoadResult[];
  /** A partner's look-up by id on the replica (one session, one order, again and again). */
  sessionLookup: LoadResult[];
  orderLookup: LoadResult[];
  /** Ponder's own GET /status on the same replica: the framework's floor for a route. */
  bareRoute: LoadResult;
  peakRssBytes: { indexer?: number; replica?: number };
};

/**
 * The production shape on one machine (docs/deploy.md): a throw-away Postgres server on
 * loopback holding the index and the store, the indexer (`ponder start --schema
 * bench_fleet_v1 --views-schema settlement`, with the workers) and one API replica
 * (`ponder serve --schema settlement`, WORKERS=off). The load generator, Anvil and Postgres
 * run on the same cores: figures are a floor.
 */
export async function measureFleet(params: {
  blockTimeS: number;
  confirmations: number;
  purchases: number;
  payRatePerS: number;
  concurrencies: number[];
  durationS: number;
  serviceEnv: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<FleetResult> {
  const { log } = params;
  const postgres = await startPostgresServer();
  const indexerMemory = startMemorySampler();
  const replicaMemory = startMemorySampler();
  let replica: PonderProcess | undefined;
  let stopStack: (() => Promise<void>) | undefined;
  try {
    const bench = await startBenchStack({
      blockTime: params.blockTimeS,
      env: {
        LOCAL_CONFIRMATIONS: String(params.confirmations),
        LOOKUP_RATE_LIMIT: "1000000",
        PUBLIC_RATE_LIMIT: "1000000",
        STORE_URL: await postgres.createDatabase("bench_fleet_store"),
        DATABASE_URL: await postgres.createDatabase("bench_fleet_index"),
        DATABASE_SCHEMA: "bench_fleet_v1",
        DATABASE_VIEWS_SCHEMA: "settlement",
        ...params.serviceEnv,
      },
    });
    stopStack = bench.stop;
    indexerMemory.watch(bench.stack.ponder.process.pid);
    indexerMemory.begin("fleet");
    const replicaEnv = Object.fromEntries(
      Object.entries(bench.stack.serviceEnv).filter(([name]) => name !== "DATABASE_VIEWS_SCHEMA"),
    );
    replica = await startPonder({
      root: PROJECT_ROOT,
      command: "serve",
      port: await findFreePort(),
      env: { ...replicaEnv, DATABASE_SCHEMA: "settlement", WORKERS: "off" },
    });
    replicaMemory.watch(replica.process.pid);
    replicaMemory.begin("fleet");
    log(`  fleet: indexer ${bench.baseUrl()}, replica ${replica.baseUrl}, Postgres on loopback`);

    // Settlement by the indexer's workers, woken by the index's notifications.
    const latency: LatencyResult = await measureSettlementLatency({
      bench,
      purchases: params.purchases,
      payRatePerS: params.payRatePerS,
      blockTimeS: params.blockTimeS,
      requiredConfirmations: params.confirmations,
      memory: indexerMemory,
      log,
    });
    const purchases = latency.settledPurchases;
    if (purchases.length === 0) throw new Error("fleet: no purchase settled");
    const baseUrl = replica.baseUrl;
    const auth = { Authorization: `Bearer ${bench.stack.local.partner.apiKey}` };
    let cursor = 0;
    const next = () => purchases[cursor++ % purchases.length]!;
    const loads = async (label: string, run: (connections: number) => Promise<LoadResult>, concurrencies: number[]) => {
      const results: LoadResult[] = [];
      for (const connections of concurrencies) {
        const result = await run(connections);
        log(`  fleet ${label} c=${connections}: ${result.rps} answers/s, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`);
        results.push(result);
      }
      return results;
    };
    const hashSubmission = await loads(
      "hash submission",
      (connections) =>
        runLoad({
          url: `${baseUrl}/v1/public/checkout/payments`,
          connections,
          durationS: params.durationS,
          nextBody: () => {
            const purchase = next();
            return { clientToken: purchase.session.clientToken, transactionHash: purchase.transactionHash };
          },
        }),
      params.concurrencies,
    );
    // autocannon keeps one URL per run: the poll cycles through sessions by its body, not its path.
    const polled = purchases[0]!;
    const statusPoll = await loads(
      "status poll",
      (connections) =>
        runLoad({
          url: `${baseUrl}/v1/public/checkout/sessions/${polled.session.id}/validate`,
          connections,
          durationS: params.durationS,
          nextBody: () => ({ clientToken: polled.session.clientToken }),
        }),
      params.concurrencies,
    );
    const sessionLookup = await loads(
      "session look-up",
      (connections) =>
        runLoad({
          url: `${baseUrl}/v1/checkout/sessions/${polled.session.id}`,
          connections,
          durationS: params.durationS,
          headers: auth,
        }),
      params.concurrencies,
    );
    const orderLookup = await loads(
      "order look-up",
      (connections) =>
        runLoad({
          url: `${baseUrl}/v1/orders/${polled.session.orderId}`,
          connections,
          durationS: params.durationS,
          headers: auth,
        }),
      params.concurrencies,
    );
    const highest = Math.max(...params.concurrencies);
    const bareRoute = await runLoad({ url: `${baseUrl}/status`, connections: highest, durationS: params.durationS });
    log(`  fleet ponder /status c=${highest}: ${bareRoute.rps} answers/s, p99 ${bareRoute.latency.p99} ms (bare route)`);
    return {
      shape:
        "throw-away Postgres on loopback, one indexer (ponder start, workers) and one replica (ponder serve, WORKERS=off); Anvil and the load generator on the same cores",
      settlement: { purchases: latency.purchases, settled: latency.settled, overhead: latency.overhead },
      hashSubmission,
      statusPoll,
      sessionLookup,
      orderLookup,
      bareRoute,
      peakRssBytes: { indexer: await indexerMemory.end("fleet"), replica: await replicaMemory.end("fleet") },
    };
  } finally {
    await replica?.stop();
    await stopStack?.();
    await indexerMemory.stop();
    await replicaMemory.stop();
    await postgres.stop();
  }
}
