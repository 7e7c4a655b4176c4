import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { type Address, numberToHex } from "viem";
import { startLocalStack } from "../../local/local-stack.js";
import { spawnPonder } from "../../local/ponder-process.js";
import { findFreePort } from "../../local/ports.js";
import { startPostgresServer } from "../../local/postgres-server.js";
import { jsonRpc } from "../support/json-rpc.js";
import { startMemorySampler } from "../support/memory.js";
import { PROJECT_ROOT } from "../support/processes.js";
import { sleep } from "../support/stats.js";
import { sprayTransfers } from "./indexer.js";

export type FleetBackfillResult = {
  shape: string;
  transfers: number;
  blocksWithTransfers: number;
  generationMs: number;
  /** spawn → Ponder's "Started backfill indexing" (build, config, store migrations, schema). */
  startupMs: number | undefined;
  /** spawn → every transfer in the build schema's table. */
  indexedAllMs: number | undefined;
  /** transfers ÷ (indexedAllMs − startupMs): the cold index after start-up. */
  transfersPerS: number | undefined;
  indexedCount: number;
  peakRssBytes: number | undefined;
  /** os.loadavg() (1, 5, 15 min) just before the spawn and once all was indexed. */
  loadAverage: { before: number[]; after: number[] };
  timedOut: boolean;
};

const FINALITY_BLOCKS = 64;
const SCHEMA = "bench_backfill_v1";

/**
 * The fleet's indexer backfilling on Postgres: `transfers` USDC transfers on a fresh Anvil,
 * then a cold `ponder start --schema bench_backfill_v1` (WORKERS=off) whose index and store
 * are on a throw-away Postgres server on loopback (docs/deploy.md's production shape; for a
 * `local` index on Postgres Ponder's RPC cache is off, so every start is cold). Postgres,
 * Anvil, the indexer and this process share the same cores.
 */
export async function measureFleetBackfill(params: {
  serviceEnv?: Record<string, string>;
  transfers: number;
  transfersPerTransaction: number;
  gapBlocks: number;
  timeoutMs: number;
  log: (line: string) => void;
}): Promise<FleetBackfillResult> {
  const { log } = params;
  const dataDir = mkdtempSync(join(tmpdir(), "settlement-bench-fleet-backfill-"));
  const coldDir = mkdtempSync(join(tmpdir(), "settlement-bench-fleet-cold-"));
  const postgres = await startPostgresServer();
  const memory = startMemorySampler();
  const stack = await startLocalStack({ dataDir }).catch(async (error) => {
    await postgres.stop();
    throw error;
  });
  // The stack's own one-process service is not measured (see measureIndexer for why it is stopped this way).
  await stack.restartService({ NETWORKS: "bench-stopped" }).then(
    (service) => service.stop(),
    () => undefined,
  );
  try {
    const { blocks, generationStart } = await sprayTransfers({
      stack,
      recipient: stack.local.partner.paymentAddress as Address,
      transfers: params.transfers,
      transfersPerTransaction: params.transfersPerTransaction,
      gapBlocks: params.gapBlocks,
      log,
    });
    await jsonRpc(stack.anvil.rpcUrl)("anvil_mine", [numberToHex(FINALITY_BLOCKS)]);
    const generationMs = performance.now() - generationStart;
    log(
      `  fleet backfill: generated ${params.transfers.toLocaleString("en")} transfers in ${(generationMs / 1000).toFixed(1)} s`,
    );

    cpSync(join(dataDir, "deployments"), join(coldDir, "deployments"), { recursive: true });
    const indexUrl = await postgres.createDatabase("bench_backfill_index");
    const env: NodeJS.ProcessEnv = {
      ...stack.serviceEnv,
      DATA_DIR: coldDir,
      WORKERS: "off",
      DATABASE_URL: indexUrl,
      STORE_URL: await postgres.createDatabase("bench_backfill_store"),
      DATABASE_SCHEMA: SCHEMA,
      ...params.serviceEnv,
    };
    const counter = new pg.Client(indexUrl);
    await counter.connect();
    const count = async () => {
      try {
        const rows = await counter.query(`select count(*)::int as n from "${SCHEMA}".usdc_transfer`);
        return Number(rows.rows[0]?.n ?? 0);
      } catch {
        return 0; // the table is not created yet
      }
    };
    const before = loadavg();
    const ponder = spawnPonder({ root: PROJECT_ROOT, port: await findFreePort(), env });
    memory.watch(ponder.process.pid);
    memory.begin("backfill");
    const spawnedAt = performance.now();
    let startupMs: number | undefined;
    let indexedAllMs: number | undefined;
    let indexedCount = 0;
    let timedOut = false;
    let peakRssBytes: number | undefined;
    try {
      while (indexedAllMs === undefined) {
        if (ponder.process.exitCode !== null)
          throw new Error(`ponder exited with ${ponder.process.exitCode}:\n${ponder.output().slice(-3000)}`);
        const elapsed = performance.now() - spawnedAt;
        if (elapsed > params.timeoutMs) {
          timedOut = true;
          break;
        }
        if (startupMs === undefined && ponder.output().includes('"msg":"Started backfill indexing"')) startupMs = elapsed;
        if (startupMs !== undefined) {
          indexedCount = await count();
          if (indexedCount >= params.transfers) indexedAllMs = performance.now() - spawnedAt;
        }
        await sleep(100);
      }
    } finally {
      peakRssBytes = await memory.end("backfill");
      memory.watch(undefined);
      await ponder.stop();
      await counter.end();
    }
    const after = loadavg();
    const round2 = (values: number[]) => values.map((value) => Math.round(value * 100) / 100);
    const transfersPerS =
      indexedAllMs === undefined || startupMs === undefined
        ? undefined
        : Math.round(params.transfers / ((indexedAllMs - startupMs) / 1000));
    log(
      `  fleet backfill: start-up ${startupMs === undefined ? "-" : (startupMs / 1000).toFixed(1)} s, all indexed at ${indexedAllMs === undefined ? "-" : (indexedAllMs / 1000).toFixed(1)} s (${transfersPerS ?? "-"} transfers/s after start-up), load average ${round2(before).join(" ")} → ${round2(after).join(" ")}`,
    );
    return {
      shape:
        "throw-away Postgres on loopback holding the index and the store, one indexer (ponder start --schema bench_backfill_v1, WORKERS=off), no RPC cache; Anvil, Postgres, the indexer and the bench share the same two cores",
      transfers: params.transfers,
      blocksWithTransfers: blocks.size,
      generationMs: Math.round(generationMs),
      startupMs: startupMs === undefined ? undefined : Math.round(startupMs),
      indexedAllMs: indexedAllMs === undefined ? undefined : Math.round(indexedAllMs),
      transfersPerS,
      indexedCount,
      peakRssBytes,
      loadAverage: { before: round2(before), after: round2(after) },
      timedOut,
    };
  } finally {
    await memory.stop();
    await stack.stop();
    await postgres.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(coldDir, { recursive: true, force: true });
  }
}
