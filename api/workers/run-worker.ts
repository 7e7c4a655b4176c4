import { hostname } from "node:os";
import { logJson } from "../logging/redact.js";
import type { Store } from "../store/open-store.js";

export type Worker = {
  name: string;
  /** Milliseconds between two ticks (a tick runs to completion before the next is scheduled). */
  intervalMs: number;
  tick: () => Promise<void>;
  /**
   * Called once on shutdown after the loop has stopped (or the grace ran out): let work
   * this worker started outside its tick finish until `deadline` (epoch ms), then hand
   * back whatever it still holds (leases), so another process may take it at once.
   */
  stop?: (deadline: number) => Promise<void>;
};

export type RunningWorkers = {
  /** No new tick starts; the running ones and the workers' own work get `graceMs` to end. */
  stop: (graceMs: number) => Promise<void>;
};

const instanceId = `${hostname()}:${process.pid}`;
const wakers = new Map<string, () => void>();
/** Workers woken while not waiting (in a tick): they tick again without waiting. A name this process does not run stays here unused (the names are a fixed few). */
const wokenDuringTick = new Set<string>();

/**
 * Ends the current wait of a worker in this process, so work that another
 * component just committed (an event for the dispatcher) is picked up at once
 * instead of at the next poll. A wake that finds the worker in a tick makes it
 * tick again straight after (the tick may have read before the commit). Other
 * processes still find the work by polling.
 */
export function wakeWorker(name: string): void {
  const wake = wakers.get(name);
  if (wake !== undefined) wake();
  else wokenDuringTick.add(name);
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
      wokenDuringTick.delete(worker.name);
      try {
        await worker.tick();
      } catch (error) {
        logJson({ level: "error", msg: "worker tick failed", worker: worker.name, error: String(error) });
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
      const wait = wokenDuringTick.has(worker.name) ? 0 : Math.max(0, worker.intervalMs - (Date.now() - started));
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
    async stop(graceMs) {
      stopped = true;
      const deadline = Date.now() + graceMs;
      for (const worker of workers) wakeWorker(worker.name);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(loops),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
      await Promise.all(workers.map((worker) => worker.stop?.(deadline).catch(() => undefined)));
    },
  };
}

/**
 * Stops the workers before the process exits on SIGTERM or SIGINT. Ponder's own
 * handlers (registered before the API entry runs) exit the process as soon as
 * its server and indexer are closed, so they are taken off and called only once
 * the workers have stopped. A second signal during the wait finds no handler and
 * ends the process at once (Ctrl-C twice).
 */
export function stopWorkersBeforeExit(running: RunningWorkers, graceMs: number): void {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    const exitHandlers = process.listeners(signal);
    process.removeAllListeners(signal);
    process.once(signal, () => {
      for (const other of ["SIGTERM", "SIGINT"] as const) if (other !== signal) process.removeAllListeners(other);
      const started = Date.now();
      void running.stop(graceMs).finally(() => {
        console.log(JSON.stringify({ level: "info", msg: "workers stopped", signal, durationMs: Date.now() - started }));
        // One of the handlers (when-exit, through Ponder's `conf`) sends the signal to the
        // process again once its own callbacks ran. With no listener left, that second signal
        // ended the process before Ponder's shutdown had released its lock on the index, and
        // the next start waited ~15 s for the lock to expire ("Schema is locked by a different
        // Ponder app", then crash recovery). From here on a signal is absorbed: Ponder's
        // shutdown exits the process itself, within its own 5 s limit.
        for (const each of ["SIGTERM", "SIGINT"] as const) process.on(each, () => undefined);
        for (const handler of exitHandlers) (handler as NodeJS.SignalsListener)(signal);
      });
    });
  }
}
