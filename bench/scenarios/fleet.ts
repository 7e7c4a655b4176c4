import { loadavg } from "node:os";
import { type PonderProcess, startPlainReplica, startPonder } from "../../local/ponder-process.js";
import { findFreePort } from "../../local/ports.js";
import { startPostgresServer } from "../../local/postgres-server.js";
import { type LoadResult, runLoad } from "../support/load.js";
import { startMemorySampler } from "../support/memory.js";
import { PROJECT_ROOT } from "../support/processes.js";
import { startBenchStack } from "../support/service-stack.js";
import type { Summary } from "../support/stats.js";
import { type LatencyResult, measureSettlementLatency } from "./settlement-latency.js";

/** One replica's figures under the same loads. */
export type ReplicaLoads = {
  /** Hash submission (hit path: settled payments again), per connection count. */
  hashSubmission: LoadResult[];
  /** The customer's status poll, POST /v1/public/checkout/sessions/{id}/validate. */
  statusPoll: LoadResult[];
  /** A partner's look-up by id (one session, one order, again and again). */
  sessionLookup: LoadResult[];
  orderLookup: LoadResult[];
  /** The server's own GET /status: the framework's floor for a route on that replica. */
  bareRoute: LoadResult;
  peakRssBytes?: number;
  /** Spawn → `/ready` answering 200, started alone. */
  startMs?: number;
};

export type FleetResult = {
  shape: string;
  /** The load average (1, 5, 15 min) when the loads began and when they ended. */
  loadAverage: { before: number[]; after: number[] };
  settlement: { purchases: number; settled: number; overhead: Summary };
  /** `ponder serve --schema settlement`, WORKERS=off. */
  hashSubmission: LoadResult[];
  statusPoll: LoadResult[];
  sessionLookup: LoadResult[];
  orderLookup: LoadResult[];
  bareRoute: LoadResult;
  /** The plain Hono replica (`npm run serve:replica`) on the same views schema, loaded in turn with `ponder serve`. */
  plain: ReplicaLoads;
  peakRssBytes: { indexer?: number; replica?: number; plainReplica?: number };
  /** `ponder serve`'s spawn → `/ready` (the plain replica's is `plain.startMs`). */
  replicaStartMs: number;
};

/**
 * The production shape on one machine (docs/deploy.md): a throw-away Postgres server on
 * loopback holding the index and the store, the indexer (`ponder start --schema
 * bench_fleet_v1 --views-schema settlement`, with the workers) and two API replicas of the
 * two kinds issue 42 asks to decide between, on the same views schema and store: `ponder serve
 * --schema settlement` and the plain Hono server (`npm run serve:replica`), both WORKERS=off.
 * Every load runs on one replica then the other (which goes first alternates), so each pair of
 * figures shares the machine's moment. The load generator, Anvil and Postgres run on the same
 * cores: figures are a floor.
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
  const plainMemory = startMemorySampler();
  let replica: PonderProcess | undefined;
  let plainReplica: PonderProcess | undefined;
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
    const replicaEnv = {
      ...Object.fromEntries(Object.entries(bench.stack.serviceEnv).filter(([name]) => name !== "DATABASE_VIEWS_SCHEMA")),
      DATABASE_SCHEMA: "settlement",
      WORKERS: "off",
    };
    // One after the other, each timed alone: what replacing a replica in a deploy waits for.
    const ponderPort = await findFreePort();
    let began = performance.now();
    replica = await startPonder({ root: PROJECT_ROOT, command: "serve", port: ponderPort, env: replicaEnv });
    const replicaStartMs = Math.round(performance.now() - began);
    const plainPort = await findFreePort();
    began = performance.now();
    plainReplica = await startPlainReplica({ root: PROJECT_ROOT, port: plainPort, env: replicaEnv });
    const plainStartMs = Math.round(performance.now() - began);
    log(`  fleet replica spawn → /ready: ponder serve ${replicaStartMs} ms, plain ${plainStartMs} ms`);
    replicaMemory.watch(replica.process.pid);
    replicaMemory.begin("fleet");
    plainMemory.watch(plainReplica.process.pid);
    plainMemory.begin("fleet");
    log(
      `  fleet: indexer ${bench.baseUrl()}, ponder serve replica ${replica.baseUrl}, plain replica ${plainReplica.baseUrl}, Postgres on loopback`,
    );

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
    const auth = { Authorization: `Bearer ${bench.stack.local.partner.apiKey}` };
    let cursor = 0;
    const next = () => purchases[cursor++ % purchases.length]!;
    // autocannon keeps one URL per run: the poll cycles through sessions by its body, not its path.
    const polled = purchases[0]!;
    const kinds = [
      { name: "ponder serve", baseUrl: replica.baseUrl },
      { name: "plain", baseUrl: plainReplica.baseUrl },
    ] as const;
    type Kind = (typeof kinds)[number]["name"];
    const routes: [
      keyof Omit<ReplicaLoads, "bareRoute" | "peakRssBytes" | "startMs">,
      string,
      (baseUrl: string, connections: number) => Promise<LoadResult>,
    ][] = [
      [
        "hashSubmission",
        "hash submission",
        (baseUrl, connections) =>
          runLoad({
            url: `${baseUrl}/v1/public/checkout/payments`,
            connections,
            durationS: params.durationS,
            nextBody: () => {
              const purchase = next();
              return { clientToken: purchase.session.clientToken, transactionHash: purchase.transactionHash };
            },
          }),
      ],
      [
        "statusPoll",
        "status poll",
        (baseUrl, connections) =>
          runLoad({
            url: `${baseUrl}/v1/public/checkout/sessions/${polled.session.id}/validate`,
            connections,
            durationS: params.durationS,
            nextBody: () => ({ clientToken: polled.session.clientToken }),
          }),
      ],
      [
        "sessionLookup",
        "session look-up",
        (baseUrl, connections) =>
          runLoad({
            url: `${baseUrl}/v1/checkout/sessions/${polled.session.id}`,
            connections,
            durationS: params.durationS,
            headers: auth,
          }),
      ],
      [
        "orderLookup",
        "order look-up",
        (baseUrl, connections) =>
          runLoad({
            url: `${baseUrl}/v1/orders/${polled.session.orderId}`,
            connections,
            durationS: params.durationS,
            headers: auth,
          }),
      ],
    ];
    const loadAverageBefore = loadavg().map((value) => Math.round(value * 10) / 10);
    const figures = new Map<Kind, Partial<ReplicaLoads>>(kinds.map((kind) => [kind.name, {}]));
    let turn = 0;
    const inTurn = () => (turn++ % 2 === 0 ? kinds : [...kinds].reverse());
    for (const [key, label, run] of routes) {
      for (const connections of params.concurrencies) {
        for (const kind of inTurn()) {
          const result = await run(kind.baseUrl, connections);
          log(
            `  fleet ${label} c=${connections} (${kind.name}): ${result.rps} answers/s, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`,
          );
          const loads = figures.get(kind.name)!;
          loads[key] = [...(loads[key] ?? []), result];
        }
      }
    }
    const highest = Math.max(...params.concurrencies);
    for (const kind of inTurn()) {
      const bareRoute = await runLoad({ url: `${kind.baseUrl}/status`, connections: highest, durationS: params.durationS });
      log(
        `  fleet /status c=${highest} (${kind.name}): ${bareRoute.rps} answers/s, p99 ${bareRoute.latency.p99} ms (bare route)`,
      );
      figures.get(kind.name)!.bareRoute = bareRoute;
    }
    const loadAverageAfter = loadavg().map((value) => Math.round(value * 10) / 10);
    log(`  fleet load average: ${loadAverageBefore.join(" ")} before the loads, ${loadAverageAfter.join(" ")} after`);
    const ponderServe = figures.get("ponder serve") as ReplicaLoads;
    const plainPeak = await plainMemory.end("fleet");
    return {
      shape:
        "throw-away Postgres on loopback, one indexer (ponder start, workers) and two replicas on the same views schema, ponder serve and the plain Hono server (npm run serve:replica), both WORKERS=off, loaded in turn; Anvil and the load generator on the same cores",
      loadAverage: { before: loadAverageBefore, after: loadAverageAfter },
      settlement: { purchases: latency.purchases, settled: latency.settled, overhead: latency.overhead },
      hashSubmission: ponderServe.hashSubmission,
      statusPoll: ponderServe.statusPoll,
      sessionLookup: ponderServe.sessionLookup,
      orderLookup: ponderServe.orderLookup,
      bareRoute: ponderServe.bareRoute,
      plain: { ...(figures.get("plain") as ReplicaLoads), peakRssBytes: plainPeak, startMs: plainStartMs },
      replicaStartMs,
      peakRssBytes: {
        indexer: await indexerMemory.end("fleet"),
        replica: await replicaMemory.end("fleet"),
        plainReplica: plainPeak,
      },
    };
  } finally {
    await Promise.all([replica?.stop(), plainReplica?.stop()]);
    await stopStack?.();
    await indexerMemory.stop();
    await replicaMemory.stop();
    await plainMemory.stop();
    await postgres.stop();
  }
}
