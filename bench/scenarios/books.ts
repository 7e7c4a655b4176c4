import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type Address, numberToHex } from "viem";
import { startLocalStack } from "../../local/local-stack.js";
import { spawnPonder } from "../../local/ponder-process.js";
import { findFreePort } from "../../local/ports.js";
import { jsonRpc } from "../support/json-rpc.js";
import type { MemorySampler } from "../support/memory.js";
import { PROJECT_ROOT } from "../support/processes.js";
import { round, sleep } from "../support/stats.js";
import { countIndexed, sprayTransfers } from "./indexer.js";

export type BooksResult = {
  transfers: number;
  range: { fromBlock: number; toBlock: number };
  /** `GET /v1/reports/reconciliation` over the whole range: the first call (reads the opening balance from the chain once) and a second. */
  reconciliationMs: { first: number; second: number };
  reconciliationRows: number;
  /** `GET /v1/ledger` with `Accept: text/csv` over the whole range, the body read as it streams and its rows counted. */
  export: {
    ms: number;
    rows: number;
    bytes: number;
    rowsPerS: number;
    /** Time to the first byte of the body (headers and the first page). */
    firstByteMs: number;
  };
  /** The service process's resident set (with its children), sampled every 200 ms. */
  rss: {
    /** Highest sample in the second before the export. */
    beforeExportBytes: number | undefined;
    /** Highest sample during the export. */
    peakDuringExportBytes: number | undefined;
    /** Peak during the export less the resident set before it. */
    peakGrowthBytes: number | undefined;
  };
  note: string;
};

/**
 * The books over 100,000 indexed transfers (issue 27): the indexer scenario's transfers
 * (sprayTransfers) made to the demo partner's payment address on a local stack whose
 * service is stopped meanwhile (indexing them live, block by block, runs at about a
 * hundred a second here), then the service started again on the same data directory
 * catches up as a backfill; then the partner's reconciliation and a full-period CSV
 * export of its ledger, timed, with the service's resident memory during the export.
 */
export async function measureBooks(params: {
  /** Extra environment for the measured start of the service (BENCH_SERVICE_ENV). */
  serviceEnv?: Record<string, string>;
  transfers: number;
  transfersPerTransaction: number;
  gapBlocks: number;
  timeoutMs: number;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<BooksResult> {
  const { log } = params;
  const dataDir = mkdtempSync(join(tmpdir(), "settlement-bench-books-"));
  const stack = await startLocalStack({ dataDir });
  // As in the indexer scenario: a restart that cannot start stops the stack's service on
  // purpose (stopping it directly would have the stack's supervisor start it again).
  await stack.restartService({ NETWORKS: "bench-stopped" }).then(
    (service) => service.stop(),
    () => undefined,
  );
  let service: ReturnType<typeof spawnPonder> | undefined;
  try {
    const authorization = `Bearer ${stack.local.partner.apiKey}`;
    const recipient = stack.local.partner.paymentAddress as Address;
    const { blocks } = await sprayTransfers({
      stack,
      recipient,
      transfers: params.transfers,
      transfersPerTransaction: params.transfersPerTransaction,
      gapBlocks: params.gapBlocks,
      log,
    });
    // Blocks on top so that the whole range is final, a backfill for the service.
    await jsonRpc(stack.anvil.rpcUrl)("anvil_mine", [numberToHex(64)]);
    const fromBlock = stack.deployment.deployBlock;
    const toBlock = Math.max(...blocks);
    // The service again, on the same data directory (the store holds the demo partner and
    // its key). The workers stay off: with them on, the settlement worker would record
    // 100,000 unresolved payments while the figures are taken; the ledger reads its facts
    // (payments, refunds, rewards) by key either way.
    log(`  starting the service; waiting for it to index ${params.transfers.toLocaleString("en")} transfers...`);
    const running = spawnPonder({
      root: PROJECT_ROOT,
      port: await findFreePort(),
      env: { ...stack.serviceEnv, WORKERS: "off", ...params.serviceEnv },
    });
    service = running;
    const baseUrl = () => `http://127.0.0.1:${running.port()}`;
    const deadline = performance.now() + params.timeoutMs;
    for (;;) {
      if (running.process.exitCode !== null)
        throw new Error(`the service exited with ${running.process.exitCode}:\n${running.output().slice(-3000)}`);
      const ready = await fetch(`${baseUrl()}/ready`).then(
        async (response) => {
          await response.arrayBuffer();
          return response.status === 200;
        },
        () => false,
      );
      const count = ready ? await countIndexed(baseUrl()).catch(() => 0) : 0;
      if (count >= params.transfers) break;
      if (performance.now() > deadline) throw new Error(`the index holds ${count} transfers after the timeout`);
      await sleep(1_000);
    }

    const range = `fromBlock=${fromBlock}&toBlock=${toBlock}`;
    const reconcile = async () => {
      const started = performance.now();
      const response = await fetch(`${baseUrl()}/v1/reports/reconciliation?${range}`, {
        headers: { Authorization: authorization },
      });
      const body = (await response.json()) as { data?: { reconciled: boolean; sums: Record<string, string> }[] };
      const ms = performance.now() - started;
      if (response.status !== 200 || body.data === undefined)
        throw new Error(`reconciliation answered ${response.status}: ${JSON.stringify(body).slice(0, 500)}`);
      return { ms, rows: body.data.length, reconciled: body.data.every((row) => row.reconciled) };
    };
    log("  reconciliation over the whole range...");
    const first = await reconcile();
    const second = await reconcile();
    if (!first.reconciled) log("  (the reconciliation does not reconcile: the figure is still the time)");
    log(`  reconciliation: ${round(first.ms)} ms, again ${round(second.ms)} ms (${first.rows} addresses)`);

    const pid = running.process.pid;
    params.memory.watch(pid);
    params.memory.begin("books-idle");
    await sleep(1_000);
    const beforeExportBytes = await params.memory.end("books-idle");
    params.memory.begin("books-export");
    log("  full-period ledger export (CSV)...");
    const started = performance.now();
    const response = await fetch(`${baseUrl()}/v1/ledger?${range}`, {
      headers: { Authorization: authorization, Accept: "text/csv" },
    });
    if (response.status !== 200 || response.body === null) throw new Error(`the ledger export answered ${response.status}`);
    let lines = 0;
    let bytes = 0;
    let firstByteMs: number | undefined;
    const reader = response.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const chunk = read.value;
      firstByteMs ??= performance.now() - started;
      bytes += chunk.byteLength;
      for (const byte of chunk) if (byte === 0x0a) lines++;
    }
    const exportMs = performance.now() - started;
    const peakDuringExportBytes = await params.memory.end("books-export");
    params.memory.watch(undefined);
    const rows = lines - 1;
    if (rows < params.transfers) throw new Error(`the export held ${rows} rows, expected ${params.transfers}`);
    const rowsPerS = Math.round(rows / (exportMs / 1000));
    const peakGrowthBytes =
      beforeExportBytes === undefined || peakDuringExportBytes === undefined
        ? undefined
        : Math.max(0, peakDuringExportBytes - beforeExportBytes);
    log(
      `  export: ${rows.toLocaleString("en")} rows in ${round(exportMs)} ms (${rowsPerS.toLocaleString("en")} rows/s), RSS growth ${
        peakGrowthBytes === undefined ? "-" : `${Math.round(peakGrowthBytes / 2 ** 20)} MiB`
      }`,
    );
    return {
      transfers: params.transfers,
      range: { fromBlock, toBlock },
      reconciliationMs: { first: round(first.ms), second: round(second.ms) },
      reconciliationRows: first.rows,
      export: { ms: round(exportMs), rows, bytes, rowsPerS, firstByteMs: round(firstByteMs ?? exportMs) },
      rss: { beforeExportBytes, peakDuringExportBytes, peakGrowthBytes },
      note: `the indexer scenario's transfers (${params.transfersPerTransaction} per transaction) to the demo partner's payment address, indexed by the service started after they were made (a backfill; workers off); the partner's API key; range = deploy block .. last transfer`,
    };
  } finally {
    params.memory.watch(undefined);
    await service?.stop();
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
