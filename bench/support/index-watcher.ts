import { performance } from "node:perf_hooks";

/**
 * Watches how far the service's indexer has got: polls Ponder's `/status` (one
 * checkpoint read) every `intervalMs` and stamps each block number with the
 * first poll that saw the index at or past it.
 */
export async function startIndexWatcher(baseUrl: string, intervalMs = 10) {
  const reached = new Map<number, number>();
  let last = -1;
  let stopped = false;
  let polls = 0;
  const read = async () => {
    const response = await fetch(`${baseUrl}/status`);
    const status = (await response.json()) as Record<string, { block?: { number?: number } }>;
    return Math.max(...Object.values(status).map((chain) => chain.block?.number ?? -1));
  };
  last = await read();
  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        const head = await read();
        polls++;
        const now = performance.now();
        for (let number = last + 1; number <= head; number++) reached.set(number, now);
        if (head > last) last = head;
      } catch {
        // the service is busy or stopping; try again
      }
      const wait = intervalMs - (performance.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  return {
    intervalMs,
    /** When the index first stood at or past block `n` (performance.now() ms). */
    reachedAt: (blockNumber: number) => reached.get(blockNumber),
    polls: () => polls,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
