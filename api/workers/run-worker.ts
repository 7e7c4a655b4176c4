import { hostname } from "node:os";
import type { Store } from "../store/open-store.js";

export type Worker = {
  name: string;
  /** Milliseconds between two ticks (a tick runs to completion before the next is scheduled). */
  intervalMs: number;
  tick: () => Promise<void>;
};

export type RunningWorkers = { stop: () => Promise<void> };

const instanceId = `${hostname()}:${process.pid}`;
const wakers = new Map<string, () => void>();

/**
 * Ends the current wait of a worker in this process, so work that another
 * component just committed (an event for the dispatcher) is picked up at once
 * instead of at the next poll. Other processes still find it by polling.
 */
export function wakeWorker(name: string): void {
  wakers.get(name)?.();
}

/**
 * Runs each worker in its own loop and records a heartbeat per worker, which
 * `/v1/health` reports. Workers coordinate through the store (row claims and
 * guarded updates), so several processes may run the same workers at once.
 */
export function runWorkers(store: Store, workers: Worker[]): RunningWorkers {
  let stopped = false;
  const loops = workers.map(async (worker) => {
    const heartbeatId = `${worker.name}@${instanceId}`;
    let lastBeat = 0;
    while (!stopped) {
      const started = Date.now();
      try {
        await worker.tick();
      } catch (error) {
        console.error(JSON.stringify({ level: "error", msg: "worker tick failed", worker: worker.name, error: String(error) }));
      }
      if (started - lastBeat > 5_000) {
        lastBeat = started;
        await store
          .insertInto("worker_heartbeat")
          .values({ id: heartbeatId, worker: worker.name, beat_at: started })
          .onConflict((oc) => oc.column("id").doUpdateSet({ beat_at: started }))
          .execute()
          .catch(() => undefined);
      }
      const wait = Math.max(0, worker.intervalMs - (Date.now() - started));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        wakers.set(worker.name, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      wakers.delete(worker.name);
    }
  });
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
