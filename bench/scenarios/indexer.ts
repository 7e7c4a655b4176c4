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
import { privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../../contracts/generated/index.js";
import { localChain } from "../../local/deploy.js";
import { startLocalStack } from "../../local/local-stack.js";
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
  await stack.ponder.stop();
  try {
    const rpcUrl = stack.anvil.rpcUrl;
    const chain = localChain({ rpcUrl, chainId: stack.local.chainId });
    const owner = privateKeyToAccount(stack.local.accounts[0]!.privateKey as Hex);
    const wallet = createWalletClient({ account: owner, chain, transport: http(rpcUrl) });
    const client = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 20 });
    const rpc = jsonRpc(rpcUrl);
    const usdc = stack.local.contracts.usdc as Address;
    const recipient = stack.local.partner.paymentAddress as Address;

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
    // Bury the last batch below Ponder's 30-block finality so the whole range is a historical backfill.
    await rpc("anvil_mine", [numberToHex(FINALITY_BLOCKS)]);
    const generationMs = performance.now() - generationStart;
    const fromBlock = stack.deployment.deployBlock;
    const toBlock = Math.max(...blocks);
    log(`  generated in ${(generationMs / 1000).toFixed(1)} s over blocks ${fromBlock}..${toBlock}`);

    // Cold start: a new data directory (empty index and store), no RPC cache, workers off.
    cpSync(join(dataDir, "deployments"), join(coldDir, "deployments"), { recursive: true });
    const counter = await startChildServer("rpc-delay-proxy.ts", { RPC_PROXY_TARGET: rpcUrl, RPC_DELAY_MS: "0" });
    const port = await findFreePort();
    const ponder = spawnPonder({
      root: PROJECT_ROOT,
      port,
      env: {
        ...stack.serviceEnv,
        DATA_DIR: coldDir,
        LOCAL_RPC_URL: counter.url,
        WORKERS: "off",
        ...(params.indexDatabaseUrl ? { DATABASE_URL: params.indexDatabaseUrl } : {}),
      },
    });
    params.memory.watch(ponder.process.pid);
    params.memory.begin("indexer");
    const spawnedAt = performance.now();
    let serverUpMs: number | undefined;
    let readyMs: number | undefined;
    let indexedAllMs: number | undefined;
    let indexedCount = 0;
    let lastCount = 0;
    let timedOut = false;
    let peakRssBytes: number | undefined;
    let ponderRpcCalls: Record<string, number> = {};
    log("  cold ponder start...");
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
            if (indexedCount >= params.transfers) indexedAllMs = performance.now() - spawnedAt;
          }
        }
        await sleep(50);
      }
    } finally {
      peakRssBytes = await params.memory.end("indexer");
      params.memory.watch(undefined);
      await ponder.stop();
      ponderRpcCalls = (await readProxyStats(counter.url)).calls;
      await counter.stop();
    }
    log(
      `  ready after ${readyMs === undefined ? "-" : (readyMs / 1000).toFixed(1)} s, all indexed after ${indexedAllMs === undefined ? "-" : (indexedAllMs / 1000).toFixed(1)} s`,
    );

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
        serverUpMs: serverUpMs === undefined ? undefined : Math.round(serverUpMs),
        readyMs: readyMs === undefined ? undefined : Math.round(readyMs),
        indexedAllMs: indexedAllMs === undefined ? undefined : Math.round(indexedAllMs),
        indexedCount,
        transfersPerS: indexedAllMs === undefined ? undefined : Math.round(params.transfers / (indexedAllMs / 1000)),
        ponderRpcCalls,
      },
      rawRpc: {
        getLogsSingleMs: round(getLogsSingleMs),
        getLogsSingleCount: single.length,
        getLogsChunkedMs: round(getLogsChunkedMs),
        getLogsChunks: chunks,
        getBlocksMs: round(getBlocksMs),
      },
      peakRssBytes,
      timedOut,
    };
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(coldDir, { recursive: true, force: true });
  }
}

/** Rows in `usdc_transfer`, read through the service's read-only GraphQL. */
async function countIndexed(baseUrl: string): Promise<number> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query: "{ usdcTransfers(limit: 1) { totalCount } }" }),
  });
  const body = (await response.json()) as { data?: { usdcTransfers?: { totalCount?: number } } };
  return body.data?.usdcTransfers?.totalCount ?? 0;
}
