import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  type Hash,
  type Hex,
  http,
  numberToHex,
  toEventSelector,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../../contracts/generated/index.js";
import { localChain } from "../../local/deploy.js";
import { type LocalStack, startLocalStack } from "../../local/local-stack.js";
import { spawnPonder } from "../../local/ponder-process.js";
import { findFreePort } from "../../local/ports.js";
import { readProxyStats } from "../rpc-delay-proxy.js";
import { jsonRpc } from "../support/json-rpc.js";
import type { MemorySampler } from "../support/memory.js";
import { PROJECT_ROOT, startChildServer } from "../support/processes.js";
import { round, sleep } from "../support/stats.js";
import { compileTransferSpray } from "../support/transfer-spray.js";

export type IndexerResult = {
  transfers: number;
  transfersPerTransaction: number;
  blocksWithTransfers: number;
  blockRange: { from: number; to: number; blocks: number };
  generation: { ms: number; note: string };
  coldStart: {
    /** spawn → Ponder's HTTP server up (build, schema, migrations). */
    serverUpMs: number | undefined;
    /** spawn → `/ready` answers 200 (historical backfill done). */
    readyMs: number | undefined;
    /** spawn → the indexed count (GraphQL totalCount) equals the transfers made. */
    indexedAllMs: number | undefined;
    indexedCount: number;
    transfersPerS: number | undefined;
    ponderRpcCalls: Record<string, number>;
  };
  /** The same data directory and schema started again, nothing changed (Ponder resumes at its checkpoint). */
  restartSameAddresses: StartFigures;
  /** Started again with one more `LOCAL_PAYMENT_ADDRESSES` entry, on a fresh schema: a full re-index. */
  restartAddedAddress: StartFigures & { schema: string };
  rawRpc: {
    /** One eth_getLogs over the whole range. */
    getLogsSingleMs: number;
    getLogsSingleCount: number;
    /** eth_getLogs in 500-block chunks (Ponder's starting range), one after the other. */
    getLogsChunkedMs: number;
    getLogsChunks: number;
    /** eth_getBlockByNumber (with transactions) for each block holding a transfer; Ponder needs these too. */
    getBlocksMs: number;
  };
  peakRssBytes: number | undefined;
  timedOut: boolean;
};

export type StartFigures = {
  /** spawn → Ponder's HTTP server up. */
  serverUpMs: number | undefined;
  /** spawn → `/ready` answers 200. */
  readyMs: number | undefined;
  /** spawn → the indexed count equals the transfers to watched addresses (index at head). */
  indexedAllMs: number | undefined;
  indexedCount: number;
  /** JSON-RPC calls by method, counted by a zero-delay proxy between Ponder and Anvil. */
  ponderRpcCalls: Record<string, number>;
  ponderRpcTotal: number;
  /** Where Ponder's time went, from its own /metrics just before the stop (ms, summed). */
  ponderTime?: PonderTime;
};

/**
 * Ponder's metrics, summed per step (milliseconds of wall time inside each step; the
 * sync's fetching overlaps indexing, so these do not add up to the elapsed time):
 * extract (`build`: reading events back from its sync store, `decode`, `format`),
 * transform (`index`: the indexing functions, ours; `load`/`commit`/`finalize`: writing the
 * index), RPC request time by method, and the indexing functions by event.
 */
export type PonderTime = {
  extract: Record<string, number>;
  transform: Record<string, number>;
  rpcMs: Record<string, number>;
  indexingFunctionsMs: Record<string, number>;
  databaseMs: Record<string, number>;
};

const TRANSFER_TOPIC = toEventSelector("Transfer(address,address,uint256)");
const CHUNK_BLOCKS = 500;
const FINALITY_BLOCKS = 64;

/**
 * Indexer throughput: makes `transfers` real USDC transfers to a payment address
 * on a fresh Anvil, then times a cold `ponder start` (new data directory, no RPC
 * cache) until it has indexed them all, beside the raw RPC reads of the range.
 */
export async function measureIndexer(params: {
  /** The cold start indexes into this Postgres database instead of PGlite in its data directory. */
  indexDatabaseUrl?: string;
  /** Extra environment for every start of the service under test (BENCH_SERVICE_ENV). */
  serviceEnv?: Record<string, string>;
  transfers: number;
  transfersPerTransaction: number;
  gapBlocks: number;
  timeoutMs: number;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<IndexerResult> {
  const { log } = params;
  const dataDir = mkdtempSync(join(tmpdir(), "settlement-bench-indexer-"));
  const coldDir = mkdtempSync(join(tmpdir(), "settlement-bench-cold-"));
  const stack = await startLocalStack({ dataDir });
  // The stack's own service is not part of this measurement; the cold one below is.
  // Stopping it directly makes the stack's supervisor start it again, and a second
  // Ponder would index the same transfers beside the one measured. A restart with a
  // configuration that cannot start (no such network) stops it on purpose and leaves
  // nothing to supervise.
  await stack.restartService({ NETWORKS: "bench-stopped" }).then(
    (service) => service.stop(),
    () => undefined,
  );
  try {
    const rpcUrl = stack.anvil.rpcUrl;
    const chain = localChain({ rpcUrl, chainId: stack.local.chainId });
    const owner = privateKeyToAccount(stack.local.accounts[0]!.privateKey as Hex);
    const wallet = createWalletClient({ account: owner, chain, transport: http(rpcUrl) });
    const client = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 20 });
    const rpc = jsonRpc(rpcUrl);
    const usdc = stack.local.contracts.usdc as Address;
    const recipient = stack.local.partner.paymentAddress as Address;
    const watched = stack.deployment.paymentAddresses as Address[];
    // The payment address an operator adds at run time (the restart below watches it too).
    const addedAddress = privateKeyToAccount(generatePrivateKey()).address;

    const { blocks, generationStart } = await sprayTransfers({
      stack,
      recipient,
      transfers: params.transfers,
      transfersPerTransaction: params.transfersPerTransaction,
      gapBlocks: params.gapBlocks,
      log,
    });
    // One transfer to the address added later: only an index that watches it holds this row.
    const addedMint = await wallet.writeContract({
      address: usdc,
      abi: testUsdcAbi,
      functionName: "mint",
      args: [addedAddress, 1n],
    });
    const addedReceipt = await client.waitForTransactionReceipt({ hash: addedMint });
    if (addedReceipt.status !== "success") throw new Error("mint to the added address reverted");
    // Bury the last batch below Ponder's 30-block finality so the whole range is a historical backfill.
    await rpc("anvil_mine", [numberToHex(FINALITY_BLOCKS)]);
    const generationMs = performance.now() - generationStart;
    const fromBlock = stack.deployment.deployBlock;
    const toBlock = Math.max(...blocks, Number(addedReceipt.blockNumber));
    log(`  generated in ${(generationMs / 1000).toFixed(1)} s over blocks ${fromBlock}..${toBlock}`);

    // Cold start: a new data directory (empty index and store), no RPC cache, workers off.
    cpSync(join(dataDir, "deployments"), join(coldDir, "deployments"), { recursive: true });
    const baseEnv: NodeJS.ProcessEnv = {
      ...stack.serviceEnv,
      DATA_DIR: coldDir,
      WORKERS: "off",
      ...(params.indexDatabaseUrl ? { DATABASE_URL: params.indexDatabaseUrl } : {}),
      ...params.serviceEnv,
    };
    log("  cold ponder start...");
    const cold = await timeStart({
      rpcUrl,
      env: baseEnv,
      expected: params.transfers,
      timeoutMs: params.timeoutMs,
      memory: params.memory,
      log,
    });
    log(`  ready after ${secondsText(cold.readyMs)} s, all indexed after ${secondsText(cold.indexedAllMs)} s`);

    // Restart with the same watched addresses: same data directory and schema, so
    // Ponder finds its index at the same build and resumes at its checkpoint.
    log("  restart, same watched addresses...");
    const sameRestart = await timeStart({ rpcUrl, env: baseEnv, expected: params.transfers, timeoutMs: params.timeoutMs, log });
    log(`  ready after ${secondsText(sameRestart.readyMs)} s, at head after ${secondsText(sameRestart.indexedAllMs)} s`);

    // Restart with one more watched payment address, as an operator's `payment-address add`
    // needs: the config's filter changes, so does Ponder's build id, and Ponder 0.16 will not
    // reuse a schema written by another build; like the service, start on a fresh schema and
    // re-index the whole range. The added address got one transfer before the cold start,
    // so the new index must hold one row more than the old one.
    log("  restart, one more watched address (fresh schema, re-index)...");
    const addedRestart = await timeStart({
      rpcUrl,
      env: {
        ...baseEnv,
        LOCAL_PAYMENT_ADDRESSES: [...watched, addedAddress].join(","),
        DATABASE_SCHEMA: "bench_added_address",
      },
      expected: params.transfers + 1,
      timeoutMs: params.timeoutMs,
      log,
    });
    log(`  ready after ${secondsText(addedRestart.readyMs)} s, at head after ${secondsText(addedRestart.indexedAllMs)} s`);
    const timedOut = cold.timedOut || sameRestart.timedOut || addedRestart.timedOut;

    // The raw reads of the same range, with nothing else running.
    const filter = (from: number, to: number) => ({
      address: usdc,
      topics: [TRANSFER_TOPIC, null, encodeAbiParameters([{ type: "address" }], [recipient])],
      fromBlock: numberToHex(from),
      toBlock: numberToHex(to),
    });
    let started = performance.now();
    const single = (await rpc("eth_getLogs", [filter(fromBlock, toBlock)])) as unknown[];
    const getLogsSingleMs = performance.now() - started;
    started = performance.now();
    let chunks = 0;
    let chunkedCount = 0;
    for (let from = fromBlock; from <= toBlock; from += CHUNK_BLOCKS) {
      const logs = (await rpc("eth_getLogs", [filter(from, Math.min(toBlock, from + CHUNK_BLOCKS - 1))])) as unknown[];
      chunkedCount += logs.length;
      chunks++;
    }
    const getLogsChunkedMs = performance.now() - started;
    if (chunkedCount !== single.length) throw new Error(`chunked eth_getLogs found ${chunkedCount}, single ${single.length}`);
    started = performance.now();
    for (const block of [...blocks].sort((a, b) => a - b)) await rpc("eth_getBlockByNumber", [numberToHex(block), true]);
    const getBlocksMs = performance.now() - started;

    return {
      transfers: params.transfers,
      transfersPerTransaction: params.transfersPerTransaction,
      blocksWithTransfers: blocks.size,
      blockRange: { from: fromBlock, to: toBlock, blocks: toBlock - fromBlock + 1 },
      generation: {
        ms: Math.round(generationMs),
        note: `TransferSpray (bench/contracts, solc-js at run time) calls usdc.transfer ${params.transfersPerTransaction}x per transaction; ${params.gapBlocks} empty blocks (anvil_mine) between transactions; ${FINALITY_BLOCKS} blocks on top so the range is final`,
      },
      coldStart: {
        ...startFigures(cold),
        transfersPerS: cold.indexedAllMs === undefined ? undefined : Math.round(params.transfers / (cold.indexedAllMs / 1000)),
      },
      restartSameAddresses: startFigures(sameRestart),
      restartAddedAddress: { ...startFigures(addedRestart), schema: "bench_added_address" },
      rawRpc: {
        getLogsSingleMs: round(getLogsSingleMs),
        getLogsSingleCount: single.length,
        getLogsChunkedMs: round(getLogsChunkedMs),
        getLogsChunks: chunks,
        getBlocksMs: round(getBlocksMs),
      },
      peakRssBytes: cold.peakRssBytes,
      timedOut,
    };
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(coldDir, { recursive: true, force: true });
  }
}

/** Rows in `usdc_transfer`, read through the service's read-only GraphQL. */
export async function countIndexed(baseUrl: string): Promise<number> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query: "{ usdcTransfers(limit: 1) { totalCount } }" }),
  });
  const body = (await response.json()) as { data?: { usdcTransfers?: { totalCount?: number } } };
  return body.data?.usdcTransfers?.totalCount ?? 0;
}

type StartRun = Omit<StartFigures, "ponderRpcTotal"> & { timedOut: boolean; peakRssBytes: number | undefined };

/** Reads the sums of Ponder's timing metrics (Prometheus text format) by one label. */
async function readPonderTime(baseUrl: string): Promise<PonderTime | undefined> {
  const text = await fetch(`${baseUrl}/metrics`)
    .then((response) => (response.ok ? response.text() : undefined))
    .catch(() => undefined);
  if (text === undefined) return undefined;
  const pick = (name: string, label: string) => {
    const out: Record<string, number> = {};
    const pattern = new RegExp(`^${name}\\{([^}]*)\\} ([0-9.eE+-]+)$`, "gm");
    for (const match of text.matchAll(pattern)) {
      const key = new RegExp(`${label}="([^"]*)"`).exec(match[1] ?? "")?.[1] ?? "all";
      out[key] = Math.round((out[key] ?? 0) + Number(match[2]));
    }
    return out;
  };
  const top = (values: Record<string, number>, n: number) =>
    Object.fromEntries(
      Object.entries(values)
        .sort((a, b) => b[1] - a[1])
        .slice(0, n),
    );
  return {
    extract: pick("ponder_historical_extract_duration", "step"),
    transform: pick("ponder_historical_transform_duration", "step"),
    rpcMs: pick("ponder_rpc_request_duration_sum", "method"),
    indexingFunctionsMs: pick("ponder_indexing_function_duration_sum", "event"),
    databaseMs: top(pick("ponder_database_method_duration_sum", "method"), 8),
  };
}

const secondsText = (ms: number | undefined) => (ms === undefined ? "-" : (ms / 1000).toFixed(1));

function startFigures(run: StartRun): StartFigures {
  const round = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms));
  return {
    serverUpMs: round(run.serverUpMs),
    readyMs: round(run.readyMs),
    indexedAllMs: round(run.indexedAllMs),
    indexedCount: run.indexedCount,
    ponderRpcCalls: run.ponderRpcCalls,
    ponderRpcTotal: Object.values(run.ponderRpcCalls).reduce((sum, calls) => sum + calls, 0),
    ...(run.ponderTime === undefined ? {} : { ponderTime: run.ponderTime }),
  };
}

/**
 * Spawns `ponder start` (reaching Anvil through a zero-delay counting proxy) and
 * times it until `/ready` answers and the index holds `expected` transfers, then
 * stops it. Memory is sampled only when a sampler is given.
 */
async function timeStart(params: {
  rpcUrl: string;
  env: NodeJS.ProcessEnv;
  expected: number;
  timeoutMs: number;
  memory?: MemorySampler;
  log: (line: string) => void;
}): Promise<StartRun> {
  const counter = await startChildServer("rpc-delay-proxy.ts", { RPC_PROXY_TARGET: params.rpcUrl, RPC_DELAY_MS: "0" });
  const port = await findFreePort();
  const ponder = spawnPonder({ root: PROJECT_ROOT, port, env: { ...params.env, LOCAL_RPC_URL: counter.url } });
  params.memory?.watch(ponder.process.pid);
  params.memory?.begin("indexer");
  const spawnedAt = performance.now();
  let serverUpMs: number | undefined;
  let readyMs: number | undefined;
  let indexedAllMs: number | undefined;
  let indexedCount = 0;
  let lastCount = 0;
  let timedOut = false;
  let peakRssBytes: number | undefined;
  let ponderRpcCalls: Record<string, number> = {};
  let ponderTime: PonderTime | undefined;
  try {
    while (readyMs === undefined || indexedAllMs === undefined) {
      if (ponder.process.exitCode !== null)
        throw new Error(`ponder exited with ${ponder.process.exitCode}:\n${ponder.output().slice(-3000)}`);
      const elapsed = performance.now() - spawnedAt;
      if (elapsed > params.timeoutMs) {
        timedOut = true;
        break;
      }
      const base = `http://127.0.0.1:${ponder.port()}`;
      if (serverUpMs === undefined && ponder.output().includes('"msg":"Created HTTP server"')) serverUpMs = elapsed;
      if (serverUpMs !== undefined) {
        if (readyMs === undefined) {
          const ready = await fetch(`${base}/ready`).catch(() => undefined);
          if (ready?.status === 200) readyMs = performance.now() - spawnedAt;
          await ready?.arrayBuffer();
        }
        if (indexedAllMs === undefined && elapsed - lastCount >= 250) {
          lastCount = elapsed;
          indexedCount = await countIndexed(base).catch(() => indexedCount);
          if (indexedCount >= params.expected) indexedAllMs = performance.now() - spawnedAt;
        }
      }
      await sleep(50);
    }
  } finally {
    if (params.memory) {
      peakRssBytes = await params.memory.end("indexer");
      params.memory.watch(undefined);
    }
    ponderTime = await readPonderTime(`http://127.0.0.1:${ponder.port()}`);
    await ponder.stop();
    ponderRpcCalls = (await readProxyStats(counter.url)).calls;
    await counter.stop();
  }
  if (indexedCount !== params.expected && !timedOut) {
    throw new Error(`the index holds ${indexedCount} transfers, expected ${params.expected}`);
  }
  return { serverUpMs, readyMs, indexedAllMs, indexedCount, ponderRpcCalls, ponderTime, timedOut, peakRssBytes };
}

/**
 * The transfers both the indexer and the books scenarios measure: `transfers` real USDC
 * transfers to `recipient`, `transfersPerTransaction` per transaction from TransferSpray
 * (bench/contracts), `gapBlocks` empty blocks between transactions. Answers the blocks
 * holding them and when generation began.
 */
export async function sprayTransfers(params: {
  stack: LocalStack;
  recipient: Address;
  transfers: number;
  transfersPerTransaction: number;
  gapBlocks: number;
  log: (line: string) => void;
}): Promise<{ blocks: Set<number>; generationStart: number }> {
  const { stack, recipient, log } = params;
  const rpcUrl = stack.anvil.rpcUrl;
  const chain = localChain({ rpcUrl, chainId: stack.local.chainId });
  const owner = privateKeyToAccount(stack.local.accounts[0]!.privateKey as Hex);
  const wallet = createWalletClient({ account: owner, chain, transport: http(rpcUrl) });
  const client = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 20 });
  const rpc = jsonRpc(rpcUrl);
  const usdc = stack.local.contracts.usdc as Address;
  log(`  generating ${params.transfers.toLocaleString("en")} transfers (${params.transfersPerTransaction} per transaction)...`);
  const generationStart = performance.now();
  const spray = compileTransferSpray();
  const deployHash = await wallet.deployContract({ abi: spray.abi, bytecode: spray.bytecode });
  const sprayAddress = (await client.waitForTransactionReceipt({ hash: deployHash })).contractAddress as Address;
  const mintHash = await wallet.writeContract({
    address: usdc,
    abi: testUsdcAbi,
    functionName: "mint",
    args: [sprayAddress, BigInt(params.transfers)],
  });
  await client.waitForTransactionReceipt({ hash: mintHash });

  const batches: number[] = [];
  for (let left = params.transfers; left > 0; left -= params.transfersPerTransaction) {
    batches.push(Math.min(left, params.transfersPerTransaction));
  }
  const gas =
    ((await client.estimateContractGas({
      account: owner,
      address: sprayAddress,
      abi: spray.abi,
      functionName: "spray",
      args: [usdc, recipient, BigInt(params.transfersPerTransaction)],
    })) *
      13n) /
    10n;
  let nonce = await client.getTransactionCount({ address: owner.address, blockTag: "pending" });
  const hashes: Hash[] = [];
  for (const [index, count] of batches.entries()) {
    if (index > 0 && index % Math.ceil(batches.length / 4) === 0) {
      log(
        `    ${index * params.transfersPerTransaction} transfers after ${((performance.now() - generationStart) / 1000).toFixed(1)} s`,
      );
    }
    hashes.push(
      await wallet.writeContract({
        address: sprayAddress,
        abi: spray.abi,
        functionName: "spray",
        args: [usdc, recipient, BigInt(count)],
        gas,
        nonce: nonce++,
      }),
    );
    // Empty blocks between batches spread the transfers over a wider range, as on a real chain.
    if (params.gapBlocks > 0) await rpc("anvil_mine", [numberToHex(params.gapBlocks)]);
  }
  const blocks = new Set<number>();
  let made = 0;
  for (const hash of hashes) {
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`spray transaction ${hash} reverted`);
    blocks.add(Number(receipt.blockNumber));
    made += receipt.logs.filter((entry) => entry.address.toLowerCase() === usdc.toLowerCase()).length;
  }
  if (made !== params.transfers) throw new Error(`made ${made} transfers, wanted ${params.transfers}`);
  return { blocks, generationStart };
}
