import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type PostgresServer, startPostgresServer } from "../local/postgres-server.js";
import { type BenchResults, config } from "./results.js";
import { measureBooks } from "./scenarios/books.js";
import { measureFleet } from "./scenarios/fleet.js";
import { measureFleetBackfill } from "./scenarios/fleet-backfill.js";
import { measureFleetDeploy } from "./scenarios/fleet-deploy.js";
import { measureGaslessPayment } from "./scenarios/gasless-payment.js";
import { measureHashSubmission } from "./scenarios/hash-submission.js";
import { measureIndexer } from "./scenarios/indexer.js";
import { measureSessionCreation } from "./scenarios/session-creation.js";
import { type LatencyResult, measureSettlementLatency } from "./scenarios/settlement-latency.js";
import { measureSubscriptionCharges } from "./scenarios/subscription-charges.js";
import { goalsOf } from "./support/goals.js";
import { startMemorySampler } from "./support/memory.js";
import { PROJECT_ROOT } from "./support/processes.js";
import { renderReport } from "./support/report.js";
import { type BenchStack, startBenchStack } from "./support/service-stack.js";

/**
 * `npm run bench`: starts its own local stacks in temporary data directories,
 * runs every scenario, prints a table and writes bench-results/latest.json.
 * A benchmark, not a test: goals are reported, never enforced; the exit code is
 * non-zero only when the harness itself broke.
 */
const log = (line: string) => console.log(line);

function gitInfo(): { commit: string | undefined; dirty: boolean | undefined } {
  try {
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: PROJECT_ROOT, encoding: "utf8" }).trim();
    const status = execFileSync("git", ["status", "--porcelain"], { cwd: PROJECT_ROOT, encoding: "utf8" });
    return { commit, dirty: status.trim() !== "" };
  } catch {
    return { commit: undefined, dirty: undefined };
  }
}

async function main(): Promise<number> {
  const started = performance.now();
  const git = gitInfo();
  const results: BenchResults = {
    startedAt: new Date().toISOString(),
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      memoryGiB: Math.round(totalmem() / 2 ** 30),
    },
    commit: git.commit,
    workingTreeDirty: git.dirty,
    config,
    errors: [],
  };
  const workDir = mkdtempSync(join(tmpdir(), "settlement-bench-work-"));
  const memory = startMemorySampler();
  const cleanups: (() => Promise<void>)[] = [];
  const onSignal = () => {
    log("\ninterrupted: stopping the stacks...");
    void Promise.allSettled(cleanups.map((cleanup) => cleanup())).then(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const scenario = async (name: string, run: () => Promise<void>) => {
    try {
      await run();
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      results.errors.push({ scenario: name, message });
      log(`  ${name} failed: ${message.split("\n").slice(0, 12).join("\n")}`);
    }
  };

  log(`benchmark (${config.quick ? "quick" : "full"} run), ${results.machine.cpus} cores, node ${process.version}`);
  let postgres: PostgresServer | undefined;
  if (config.postgresIndex) {
    log("starting a PostgreSQL server for the index (BENCH_POSTGRES=1)...");
    const server = await startPostgresServer();
    postgres = server;
    cleanups.push(() => server.stop());
  }
  const wantsStack = ["latency", "gasless", "hash", "sessions"].some((name) => config.only.includes(name));
  if (wantsStack) {
    let bench: BenchStack | undefined;
    await scenario("service stack", async () => {
      log(`starting a local stack (block time ${config.blockTimeS} s, ${config.confirmations} confirmations)...`);
      bench = await startBenchStack({
        blockTime: config.blockTimeS,
        env: {
          LOCAL_CONFIRMATIONS: String(config.confirmations),
          // The bench is one client hammering the API: per-IP rate limits would measure the limiter.
          LOOKUP_RATE_LIMIT: "1000000",
          PUBLIC_RATE_LIMIT: "1000000",
          ...(postgres ? { DATABASE_URL: await postgres.createDatabase("bench_service_index") } : {}),
          ...config.serviceEnv,
        },
      });
      const stack = bench;
      cleanups.push(() => stack.stop());
      memory.watch(stack.stack.ponder.process.pid);
    });
    if (bench !== undefined) {
      const stack = bench;
      let latency: LatencyResult | undefined;
      if (config.only.includes("latency") || config.only.includes("hash")) {
        await scenario("settlement latency", async () => {
          log("settlement latency");
          latency = await measureSettlementLatency({
            bench: stack,
            purchases: config.purchases,
            payRatePerS: config.payRatePerS,
            blockTimeS: config.blockTimeS,
            requiredConfirmations: config.confirmations,
            memory,
            log,
          });
          const { settledPurchases: _, ...rest } = latency;
          results.latency = rest;
        });
      }
      if (config.only.includes("gasless")) {
        await scenario("gasless payment", async () => {
          log("gasless payment (EIP-3009, relayed)");
          results.gasless = await measureGaslessPayment({
            bench: stack,
            purchases: config.gaslessPurchases,
            payRatePerS: config.payRatePerS,
            memory,
            log,
          });
        });
      }
      if (config.only.includes("hash") && latency !== undefined) {
        const settled = latency.settledPurchases;
        await scenario("hash submission", async () => {
          log("hash submission (hit path)");
          results.hashSubmission = await measureHashSubmission({
            bench: stack,
            purchases: settled,
            concurrencies: config.concurrencies,
            durationS: config.durationS,
            rpcDelayMs: config.rpcDelayMs,
            requiredConfirmations: config.confirmations,
            workDir,
            memory,
            log,
          });
        });
      }
      if (config.only.includes("sessions")) {
        await scenario("session creation", async () => {
          log("session creation");
          results.sessionCreation = await measureSessionCreation({
            bench: stack,
            connections: config.sessionConcurrency,
            durationS: config.durationS,
            memory,
            log,
          });
        });
      }
      memory.watch(undefined);
      await stack.stop();
      cleanups.pop();
    }
  }

  // Its own stack: it moves the chain's clock an hour ahead, which would make later payments late.
  if (config.only.includes("subscriptions")) {
    await scenario("subscription charges", async () => {
      log(`subscription charges (${config.subscriptions} due together)`);
      const bench = await startBenchStack({
        blockTime: config.blockTimeS,
        env: {
          LOCAL_CONFIRMATIONS: String(config.confirmations),
          LOOKUP_RATE_LIMIT: "1000000",
          PUBLIC_RATE_LIMIT: "1000000",
          // A thousand charges in one day exceed the default gas budget: the bench measures the worker, not the budget.
          RELAYER_PARTNER_DAILY_GAS_WEI: "1000000000000000000000",
          RELAYER_PARTNER_DAILY_RELAYS: "1000000",
          ...(postgres ? { DATABASE_URL: await postgres.createDatabase("bench_subscriptions_index") } : {}),
          ...config.serviceEnv,
        },
      });
      cleanups.push(() => bench.stop());
      memory.watch(bench.stack.ponder.process.pid);
      try {
        results.subscriptionCharges = await measureSubscriptionCharges({
          bench,
          subscriptions: config.subscriptions,
          timeoutMs: config.indexerTimeoutMs,
          memory,
          log,
        });
      } finally {
        memory.watch(undefined);
        await bench.stop();
        cleanups.pop();
      }
    });
  }

  if (config.only.includes("indexer")) {
    await scenario("indexer", async () => {
      log("indexer");
      results.indexer = await measureIndexer({
        indexDatabaseUrl: postgres ? await postgres.createDatabase("bench_cold_index") : undefined,
        serviceEnv: config.serviceEnv,
        transfers: config.transfers,
        transfersPerTransaction: config.transfersPerTransaction,
        gapBlocks: config.gapBlocks,
        timeoutMs: config.indexerTimeoutMs,
        memory,
        log,
      });
    });
  }

  if (config.only.includes("fleet")) {
    await scenario("fleet", async () => {
      log("fleet (Postgres, one indexer, a ponder serve replica and a plain replica)");
      results.fleet = await measureFleet({
        blockTimeS: config.blockTimeS,
        confirmations: config.confirmations,
        purchases: config.purchases,
        payRatePerS: config.payRatePerS,
        concurrencies: config.concurrencies,
        durationS: config.durationS,
        serviceEnv: config.serviceEnv,
        log,
      });
    });
  }

  if (config.only.includes("fleet-backfill")) {
    await scenario("fleet backfill", async () => {
      log(`fleet backfill (Postgres, the indexer alone, ${config.transfers.toLocaleString("en")} transfers)`);
      results.fleetBackfill = await measureFleetBackfill({
        serviceEnv: config.serviceEnv,
        transfers: config.transfers,
        transfersPerTransaction: config.transfersPerTransaction,
        gapBlocks: config.gapBlocks,
        timeoutMs: config.indexerTimeoutMs,
        log,
      });
    });
  }

  if (config.only.includes("fleet-deploy")) {
    await scenario("fleet deploy", async () => {
      log("fleet deploy (a new build under load, docs/deploy.md's steps)");
      results.fleetDeploy = await measureFleetDeploy({
        blockTimeS: config.blockTimeS,
        confirmations: config.confirmations,
        connections: config.sessionConcurrency,
        payIntervalMs: 500,
        serviceEnv: config.serviceEnv,
        log,
      });
    });
  }

  // Issue 27's books: not in the default run (it builds its own 100,000 transfers); BENCH_ONLY=books.
  if (config.only.includes("books")) {
    await scenario("books", async () => {
      log("books (reconciliation and CSV export)");
      results.books = await measureBooks({
        serviceEnv: config.serviceEnv,
        transfers: config.transfers,
        transfersPerTransaction: config.transfersPerTransaction,
        gapBlocks: config.gapBlocks,
        timeoutMs: config.indexerTimeoutMs,
        memory,
        log,
      });
    });
  }

  await memory.stop();
  await postgres?.stop();
  rmSync(workDir, { recursive: true, force: true });
  results.durationS = Math.round((performance.now() - started) / 1000);
  results.goals = goalsOf(results);

  const report = renderReport(results);
  log(`\n${report}`);
  const outDir = join(PROJECT_ROOT, "bench-results");
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, "latest.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, "latest.txt"), `${report}\n`);
  log(`wrote bench-results/latest.json and bench-results/latest.txt (${results.durationS} s in all)`);
  return results.errors.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
