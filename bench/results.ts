import { DEFAULT_RPC_DELAY_MS } from "./rpc-delay-proxy.js";
import type { BooksResult } from "./scenarios/books.js";
import type { FleetResult } from "./scenarios/fleet.js";
import type { FleetBackfillResult } from "./scenarios/fleet-backfill.js";
import type { FleetDeployResult } from "./scenarios/fleet-deploy.js";
import type { GaslessResult } from "./scenarios/gasless-payment.js";
import type { HashSubmissionResult } from "./scenarios/hash-submission.js";
import type { IndexerResult } from "./scenarios/indexer.js";
import type { SessionCreationResult } from "./scenarios/session-creation.js";
import type { LatencyResult } from "./scenarios/settlement-latency.js";
import type { SubscriptionChargesResult } from "./scenarios/subscription-charges.js";

/**
 * What `npm run bench` runs with (the environment's BENCH_* variables) and what it writes
 * to bench-results/latest.json: read by the run, the goals and the report alike.
 */
const quick = process.env.BENCH_QUICK === "1";
const envNumber = (name: string, fallback: number) => {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
};

export const config = {
  quick,
  purchases: envNumber("BENCH_PURCHASES", quick ? 50 : 200),
  gaslessPurchases: envNumber("BENCH_GASLESS_PURCHASES", quick ? 10 : 40),
  /** Issue 44: active subscriptions whose first period falls due at the same chain second. */
  subscriptions: envNumber("BENCH_SUBSCRIPTIONS", quick ? 100 : 1_000),
  payRatePerS: envNumber("BENCH_PAY_RATE", 4),
  blockTimeS: envNumber("BENCH_BLOCK_TIME", 1),
  confirmations: envNumber("BENCH_CONFIRMATIONS", 2),
  durationS: envNumber("BENCH_DURATION_S", quick ? 3 : 8),
  concurrencies: [1, 16, 64],
  sessionConcurrency: 16,
  rpcDelayMs: envNumber("BENCH_RPC_DELAY_MS", DEFAULT_RPC_DELAY_MS),
  transfers: envNumber("BENCH_TRANSFERS", quick ? 10_000 : 100_000),
  transfersPerTransaction: 250,
  // Anvil mines each block of anvil_mine one by one, ever slower as the chain grows: keep gaps short.
  gapBlocks: 4,
  indexerTimeoutMs: envNumber("BENCH_INDEXER_TIMEOUT_S", 600) * 1000,
  /** Extra environment for the service under test, e.g. '{"LOCAL_POLLING_INTERVAL_MS":"250"}' (experiments). */
  serviceEnv: JSON.parse(process.env.BENCH_SERVICE_ENV ?? "{}") as Record<string, string>,
  /** Ponder's index on a throw-away PostgreSQL server (DATABASE_URL) instead of embedded PGlite. */
  postgresIndex: process.env.BENCH_POSTGRES === "1",
  only: (process.env.BENCH_ONLY ?? "latency,gasless,hash,sessions,subscriptions,indexer,fleet,fleet-backfill,fleet-deploy")
    .split(",")
    .map((name) => name.trim()),
};

export type BenchResults = {
  startedAt: string;
  durationS?: number;
  machine: { node: string; platform: string; cpus: number; cpuModel: string; memoryGiB: number };
  commit: string | undefined;
  workingTreeDirty: boolean | undefined;
  config: typeof config;
  latency?: Omit<LatencyResult, "settledPurchases">;
  gasless?: GaslessResult;
  hashSubmission?: HashSubmissionResult;
  sessionCreation?: SessionCreationResult;
  indexer?: IndexerResult;
  /** Issue 44: the worker charging subscriptions that fall due together. */
  subscriptionCharges?: SubscriptionChargesResult;
  /** Issue 27: reconciliation and the full-period CSV export over 100,000 indexed transfers (BENCH_ONLY=books). */
  books?: BooksResult;
  /** Issue 42: the production shape, an indexer and one API replica on Postgres (BENCH_ONLY includes fleet). */
  fleet?: FleetResult;
  /** Issue 42: the fleet's indexer backfilling 100,000 transfers on Postgres (BENCH_ONLY includes fleet-backfill). */
  fleetBackfill?: FleetBackfillResult;
  /** Issue 42: a deploy of a new build under load by docs/deploy.md's steps (BENCH_ONLY includes fleet-deploy). */
  fleetDeploy?: FleetDeployResult;
  /** Issue 30's goals, one entry each, beside the figure before it. */
  goals?: Goal[];
  errors: { scenario: string; message: string }[];
};

/** One goal of issue 30, as `bench-results/latest.json` carries it. */
export type Goal = {
  figure: string;
  goal: string;
  value: number | null;
  unit: string;
  /** The figure before issue 30 (bench/README.md, 2026-11-23 runs), for comparison. */
  baseline: number | null;
  met: boolean | null;
};
