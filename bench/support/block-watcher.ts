import { performance } from "node:perf_hooks";
import { jsonRpc } from "./json-rpc.js";

/**
 * Watches the chain from the bench process: polls `eth_blockNumber` every
 * `intervalMs` and stamps each block number with performance.now() of the poll
 * that first saw it, then reads the block's transaction hashes so a payment can
 * be tied to the block that carried it. Precision: one poll interval plus one
 * loopback RPC round trip.
 */
export type BlockWatcher = {
  /** When block `n` was first seen (performance.now() ms). */
  seenAt: (blockNumber: number) => number | undefined;
  /** The block that carried a transaction, once seen. */
  blockOf: (transactionHash: string) => number | undefined;
  waitForBlock: (blockNumber: number, timeoutMs: number) => Promise<number | undefined>;
  /** Block numbers that appeared two or more at once (their time is shared, less precise). */
  skipped: () => number;
  intervals: () => number[];
  polls: () => number;
  stop: () => Promise<void>;
};

export async function startBlockWatcher(rpcUrl: string, intervalMs = 5): Promise<BlockWatcher> {
  const rpc = jsonRpc(rpcUrl);
  const seen = new Map<number, number>();
  const transactions = new Map<string, number>();
  let last = Number(await rpc("eth_blockNumber"));
  let stopped = false;
  let skipped = 0;
  let polls = 0;
  const pendingReads: Promise<void>[] = [];

  const readBlock = async (blockNumber: number) => {
    const block = (await rpc("eth_getBlockByNumber", [`0x${blockNumber.toString(16)}`, false])) as {
      transactions: string[];
    } | null;
    for (const hash of block?.transactions ?? []) transactions.set(hash.toLowerCase(), blockNumber);
  };

  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        const current = Number(await rpc("eth_blockNumber"));
        polls++;
        const now = performance.now();
        if (current > last) {
          if (current - last > 1) skipped += current - last - 1;
          for (let number = last + 1; number <= current; number++) {
            seen.set(number, now);
            pendingReads.push(readBlock(number).catch(() => undefined));
          }
          last = current;
        }
      } catch {
        // anvil busy or stopping; try again
      }
      const wait = intervalMs - (performance.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();

  return {
    seenAt: (blockNumber) => seen.get(blockNumber),
    blockOf: (hash) => transactions.get(hash.toLowerCase()),
    async waitForBlock(blockNumber, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline) {
        const at = seen.get(blockNumber);
        if (at !== undefined) return at;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return undefined;
    },
    skipped: () => skipped,
    intervals() {
      const numbers = [...seen.keys()].sort((a, b) => a - b);
      const gaps: number[] = [];
      for (let i = 1; i < numbers.length; i++) {
        const previous = numbers[i - 1] as number;
        const current = numbers[i] as number;
        if (current === previous + 1) gaps.push((seen.get(current) as number) - (seen.get(previous) as number));
      }
      return gaps;
    },
    polls: () => polls,
    async stop() {
      stopped = true;
      await loop;
      await Promise.all(pendingReads);
    },
  };
}
