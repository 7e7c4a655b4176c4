import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { BenchResults, Goal } from "../results.js";
import type { LoadResult } from "./load.js";
import { PROJECT_ROOT } from "./processes.js";

const MiB = 2 ** 20;
const seconds = (ms: number | undefined) => (ms === undefined ? null : Math.round(ms / 100) / 10);
const mib = (bytes: number | undefined) => (bytes === undefined ? null : Math.round(bytes / MiB));
const below = (value: number | null, limit: number) => (value === null ? null : value < limit);

/** `du` of node_modules in MiB (the install goal); null when it cannot be measured. */
function nodeModulesMiB(): number | null {
  try {
    const out = execFileSync("du", ["-sm", join(PROJECT_ROOT, "node_modules")], { encoding: "utf8" });
    return Number(out.split(/\s/)[0]);
  } catch {
    return null;
  }
}

/**
 * The goals of issue 30, one entry each, from whatever scenarios ran (value null when
 * the scenario did not run). Install time is not measured by the bench: pass it as
 * BENCH_INSTALL_S (seconds of `npm install` on a fresh clone) to report it.
 */
export function goalsOf(results: BenchResults): Goal[] {
  const indexer = results.indexer;
  const peaks = [
    results.latency?.peakRssBytes,
    results.hashSubmission?.peakRssBytes.service,
    results.sessionCreation?.peakRssBytes,
    indexer?.peakRssBytes,
  ].filter((peak): peak is number => peak !== undefined);
  const coldMs = indexer?.coldStart.indexedAllMs;
  const rawMs = indexer?.rawRpc.getLogsSingleMs;
  const coldRatio = coldMs !== undefined && rawMs !== undefined && rawMs > 0 ? Math.round((coldMs / rawMs) * 10) / 10 : null;
  const restartMs = indexer?.restartSameAddresses.readyMs;
  const restartCalls = indexer?.restartSameAddresses.ponderRpcCalls.eth_getLogs;
  const addedMs = indexer?.restartAddedAddress.indexedAllMs;
  const p99 = results.hashSubmission?.goals.p99At64;
  const overheadP50 = results.latency?.overhead.p50;
  const books = results.books;
  const reconciliationS = seconds(books?.reconciliationMs.first);
  const exportRowsPerS = books?.export.rowsPerS ?? null;
  const exportGrowth = mib(books?.rss.peakGrowthBytes);
  const subscriptions = results.subscriptionCharges;
  const installS = process.env.BENCH_INSTALL_S === undefined ? null : Number(process.env.BENCH_INSTALL_S);
  const size = nodeModulesMiB();
  return [
    {
      figure: "restart, same configuration, 100,000 indexed transfers: spawn → ready",
      goal: "< 10 s",
      value: seconds(restartMs),
      unit: "s",
      // The 82.8 s of 2026-11-23 re-read the chain with the cache off and waited for a lock left
      // held: it never described the service's restart (bench/README.md), so no baseline.
      baseline: null,
      met: below(seconds(restartMs), 10),
    },
    {
      figure: "restart, same configuration: eth_getLogs calls (a range already indexed is never fetched again)",
      goal: "0 for the indexed range",
      value: indexer === undefined ? null : (restartCalls ?? 0),
      unit: "calls",
      baseline: 42,
      met: indexer === undefined ? null : (restartCalls ?? 0) === 0,
    },
    {
      figure: "one more watched address: spawn → new index holds 100,001 rows",
      goal: "< 60 s",
      value: seconds(addedMs),
      unit: "s",
      baseline: 105.4,
      met: below(seconds(addedMs), 60),
    },
    {
      figure: "cold index of 100,000 transfers ÷ raw eth_getLogs of the range",
      goal: "< 5×",
      value: coldRatio,
      unit: "×",
      baseline: 23.9,
      met: below(coldRatio, 5),
    },
    {
      figure: "peak RSS of the service (highest over the scenarios that ran)",
      goal: "< 512 MiB",
      value: peaks.length === 0 ? null : mib(Math.max(...peaks)),
      unit: "MiB",
      baseline: 967,
      met: peaks.length === 0 ? null : below(mib(Math.max(...peaks)), 512),
    },
    {
      figure: "hash submission p99 at 64 connections",
      goal: "< 20 ms",
      value: p99 ?? null,
      unit: "ms",
      baseline: 81,
      met: below(p99 ?? null, 20),
    },
    {
      figure: "settlement overhead p50 (confirming block → purchase.settled received)",
      goal: "< 50 ms",
      value: overheadP50 ?? null,
      unit: "ms",
      baseline: 65,
      met: below(overheadP50 ?? null, 50),
    },
    // Issue 27 (BENCH_ONLY=books): no figure before it, so no baseline.
    {
      figure: "books: reconciliation over 100,000 indexed transfers (GET /v1/reports/reconciliation, first call)",
      goal: "< 2 s",
      value: reconciliationS,
      unit: "s",
      baseline: null,
      met: below(reconciliationS, 2),
    },
    {
      figure: "books: full-period CSV export of the ledger over 100,000 indexed transfers",
      goal: "≥ 50,000 rows/s",
      value: exportRowsPerS,
      unit: "rows/s",
      baseline: null,
      met: exportRowsPerS === null ? null : exportRowsPerS >= 50_000,
    },
    {
      figure: "books: peak RSS growth of the service during that export",
      goal: "< 50 MiB",
      value: exportGrowth,
      unit: "MiB",
      baseline: null,
      met: below(exportGrowth, 50),
    },
    // Issue 44: no target in the issue and no figure before it; reported, never judged.
    {
      figure: `subscriptions: due charges submitted per second by the worker, ${subscriptions?.subscriptions.toLocaleString("en") ?? "1,000"} active subscriptions due together (charged within the wait: ${subscriptions === undefined ? "-" : subscriptions.charged})`,
      goal: "reported (issue 44 sets no target)",
      value: subscriptions?.submittedPerS ?? null,
      unit: "charges/s",
      baseline: null,
      met: null,
    },
    {
      figure: "subscriptions: period's start → subscription.charged received, p50 (same run)",
      goal: "reported (issue 44 sets no target)",
      value: seconds(subscriptions?.startToCharged?.p50),
      unit: "s",
      baseline: null,
      met: null,
    },
    ...fleetGoals(results),
    ...fleetBackfillGoals(results),
    ...fleetDeployGoals(results),
    {
      figure: "npm install on a fresh clone (BENCH_INSTALL_S, not measured by the bench)",
      goal: "< 90 s, no engine warning on Node 20",
      value: installS,
      unit: "s",
      baseline: null,
      met: below(installS, 90),
    },
    {
      figure: "node_modules size (du -sm)",
      goal: "< 500 MB",
      value: size,
      unit: "MiB",
      baseline: 883,
      met: size === null ? null : size * 1.048576 < 500,
    },
  ];
}

/**
 * Issue 42's fleet figures (BENCH_ONLY includes fleet). Each carries as its baseline today's
 * one-process figure from the same run where the bench has one (the development stack's hash
 * submission, its settlement overhead), else null.
 */
function fleetGoals(results: BenchResults): Goal[] {
  const fleet = results.fleet;
  const at = (loads: LoadResult[] | undefined, connections: number) => loads?.find((load) => load.connections === connections);
  const p99At16 = (loads: LoadResult[] | undefined) => at(loads, 16)?.latency.p99 ?? null;
  const rpsAt64 = (loads: LoadResult[] | undefined) => at(loads, 64)?.rps ?? null;
  const ofBare = (loads: LoadResult[] | undefined, bare: LoadResult | undefined) => {
    const rps = rpsAt64(loads);
    return rps === null || bare === undefined || bare.rps === 0 ? null : Math.round((rps / bare.rps) * 100);
  };
  const oneProcess = results.hashSubmission?.service;
  const plain = fleet?.plain;
  // Each route on `ponder serve` then on the plain replica (same run, loaded in turn): the
  // plain replica's baseline is the `ponder serve` figure beside it.
  const routes: [string, LoadResult[] | undefined, LoadResult[] | undefined, LoadResult[] | undefined][] = [
    ["hash submission", fleet?.hashSubmission, plain?.hashSubmission, oneProcess],
    ["status poll", fleet?.statusPoll, plain?.statusPoll, undefined],
    ["session look-up", fleet?.sessionLookup, plain?.sessionLookup, undefined],
    ["order look-up", fleet?.orderLookup, plain?.orderLookup, undefined],
  ];
  const replicaGoals = (
    name: string,
    kind: string,
    loads: LoadResult[] | undefined,
    baseline: LoadResult[] | undefined,
    bare: LoadResult | undefined,
  ): Goal[] => [
    {
      figure: `fleet: ${name} p99 c=16 (${kind})`,
      goal: "< 20 ms",
      value: p99At16(loads),
      unit: "ms",
      baseline: p99At16(baseline),
      met: below(p99At16(loads), 20),
    },
    {
      figure: `fleet: ${name} answers/s c=64 (${kind})`,
      goal: "≥ 3,000/s",
      value: rpsAt64(loads),
      unit: "/s",
      baseline: rpsAt64(baseline),
      met: rpsAt64(loads) === null ? null : rpsAt64(loads)! >= 3_000,
    },
    {
      figure: `fleet: ${name} c=64 ÷ the bare route (GET /status) on the same replica (${kind})`,
      goal: "≥ 80 %",
      value: ofBare(loads, bare),
      unit: "%",
      baseline: null,
      met: ofBare(loads, bare) === null ? null : ofBare(loads, bare)! >= 80,
    },
  ];
  const goals: Goal[] = routes.flatMap(([name, ponderServe, plainLoads, today]) => [
    ...replicaGoals(name, "ponder serve replica", ponderServe, today, fleet?.bareRoute),
    ...replicaGoals(name, "plain replica", plainLoads, ponderServe, plain?.bareRoute),
  ]);
  goals.push({
    figure: "fleet: replica spawn → /ready (plain replica; baseline ponder serve)",
    goal: "reported (a deploy replaces replicas one by one)",
    value: seconds(plain?.startMs),
    unit: "s",
    baseline: seconds(fleet?.replicaStartMs),
    met: null,
  });
  goals.push({
    figure: "fleet: bare route GET /status answers/s c=64 (plain replica)",
    goal: "reported (the framework's floor)",
    value: plain?.bareRoute.rps ?? null,
    unit: "/s",
    baseline: fleet?.bareRoute.rps ?? null,
    met: null,
  });
  const overheadP50 = fleet?.settlement.overhead.p50 ?? null;
  goals.push(
    {
      figure: "fleet: confirming block → purchase.settled received, p50",
      goal: "< 35 ms",
      value: overheadP50,
      unit: "ms",
      baseline: results.latency?.overhead.p50 ?? null,
      met: below(overheadP50, 35),
    },
    {
      figure: "fleet: peak RSS of the indexer (settlement and loads, not a backfill)",
      goal: "< 512 MiB",
      value: mib(fleet?.peakRssBytes.indexer),
      unit: "MiB",
      baseline: null,
      met: below(mib(fleet?.peakRssBytes.indexer), 512),
    },
    {
      figure: "fleet: peak RSS of the replica under load (ponder serve replica)",
      goal: "< 512 MiB",
      value: mib(fleet?.peakRssBytes.replica),
      unit: "MiB",
      baseline: null,
      met: below(mib(fleet?.peakRssBytes.replica), 512),
    },
    {
      figure: "fleet: peak RSS of the replica under load (plain replica)",
      goal: "< 512 MiB",
      value: mib(fleet?.peakRssBytes.plainReplica),
      unit: "MiB",
      baseline: mib(fleet?.peakRssBytes.replica),
      met: below(mib(fleet?.peakRssBytes.plainReplica), 512),
    },
  );
  return goals;
}

/**
 * Issue 42: the fleet's indexer backfilling on Postgres (BENCH_ONLY includes fleet-backfill), each
 * beside the one-process cold start on PGlite of the same run (the indexer scenario), whose rate is
 * counted from the spawn and whose start-up ends at "HTTP server up": the nearest figures it has.
 */
function fleetBackfillGoals(results: BenchResults): Goal[] {
  const backfill = results.fleetBackfill;
  const cold = results.indexer?.coldStart;
  const rate = backfill?.transfersPerS ?? null;
  const startup = seconds(backfill?.startupMs);
  const rss = mib(backfill?.peakRssBytes);
  return [
    {
      figure: "fleet: cold index on Postgres, transfers/s after start-up (baseline: one process on PGlite, from spawn)",
      goal: "≥ 6,000/s",
      value: rate,
      unit: "/s",
      baseline: cold?.transfersPerS ?? null,
      met: rate === null ? null : rate >= 6_000,
    },
    {
      figure: "fleet: indexer start-up, spawn → backfill indexing started (baseline: one process, spawn → HTTP server up)",
      goal: "< 5 s",
      value: startup,
      unit: "s",
      baseline: seconds(cold?.serverUpMs),
      met: below(startup, 5),
    },
    {
      figure: "fleet: peak RSS of the indexer during the backfill (baseline: one process's cold start on PGlite)",
      goal: "< 512 MiB",
      value: rss,
      unit: "MiB",
      baseline: mib(results.indexer?.peakRssBytes),
      met: below(rss, 512),
    },
  ];
}

/** Issue 42: a deploy of a new build under load (BENCH_ONLY includes fleet-deploy); no one-process figure compares. */
function fleetDeployGoals(results: BenchResults): Goal[] {
  const deploy = results.fleetDeploy;
  const failures = deploy === undefined ? null : deploy.fiveXx + deploy.refused;
  const gap = seconds(deploy?.longestSettlementGapMs);
  return [
    {
      figure: "fleet: deploy of a new build under load, 5xx answers and refused connections",
      goal: "0",
      value: failures,
      unit: "answers",
      baseline: null,
      met: failures === null ? null : failures === 0,
    },
    {
      figure: "fleet: deploy of a new build under load, longest gap between two settlements",
      goal: "a few seconds (< 5 s)",
      value: gap,
      unit: "s",
      baseline: null,
      met: below(gap, 5),
    },
  ];
}
