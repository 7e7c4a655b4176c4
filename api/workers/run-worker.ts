import { hostname } from "node:os";
import { logJson } from "../logging/redact.js";
import type { Store } from "../store/open-store.js";
import type { WorkerLease } from "./worker-lease.js";

export type Worker = {
  name: string;
  /** Milliseconds between two ticks (a tick runs to completion before the next is scheduled). */
  intervalMs: number;
  tick: () => Promise<void>;
  /**
   * Its work appears with newly indexed data (settlement, refunds, mints, reward claims):
   * while the index's notifications arrive it is woken by them and polls only as a safety net.
   */
  wokenByIndex?: boolean;
  /**
   * Called once on shutdown after the loop has stopped (or the grace ran out): let work
   * this worker started outside its tick finish until `deadline` (epoch ms), then hand
   * back whatever it still holds (leases), so another process may take it at once.
   */
  stop?: (deadline: number) => Promise<void>;
};

export type RunningWorkers = {
  /** No new tick starts; the running ones and the workers' own work get `graceMs` to end; then the lease is released. */
  stop: (graceMs: number) => Promise<void>;
  /** Ends the wait of every worker marked `wokenByIndex`: the index moved, or its notifications started or stopped. */
  wakeIndexDriven: () => void;
};

export type RunWorkersOptions = {
  /** On a shared store, the workers tick only while this process holds the lease. */
  lease?: WorkerLease;
  /** The index's notifications: while connected, `wokenByIndex` workers wait `safetyPollMs` between ticks. */
  indexPush?: { connected: () => boolean };
  safetyPollMs?: number;
};

/** How long a worker of a process without the lease waits before it looks again (taking the lease wakes it). */
const STANDBY_WAIT_MS = 1_000;

/**
 * The longest a worker waits after a tick: its own interval, or, for a worker the
 * index wakes while the index's notifications arrive, the longer safety-net poll
 * (which only catches a notification that was lost).
 */
export function waitBetweenTicks(params: {
  intervalMs: number;
  wokenByIndex: boolean;
  pushConnected: boolean;
  safetyPollMs: number;
}): number {
  return params.wokenByIndex && params.pushConnected ? Math.max(params.intervalMs, params.safetyPollMs) : params.intervalMs;
}

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
 * `/v1/health` reports. With a `lease` (a Postgres store shared by several
 * processes) the workers tick only while this process holds it: one set acts at a
 * time, the others stand by. Workers also coordinate through the store (row claims
 * and guarded updates), which covers the moment two sets overlap (a holder that has
 * not yet noticed it lost its session).
 */
export function runWorkers(store: Store, workers: Worker[], options: RunWorkersOptions = {}): RunningWorkers {
  let stopped = false;
  const { lease, indexPush, safetyPollMs = 0 } = options;
  // Taking the lease ends the standby wait at once.
  lease?.onChange((held) => {
    if (held) for (const worker of workers) wakeWorker(worker.name);
  });
  const loops = workers.map(async (worker) => {
    const heartbeatId = `${worker.name}@${instanceId}`;
    let lastBeat = 0;
    while (!stopped) {
      // A tick under way when the lease is lost runs to its end; no new one starts.
      if (lease !== undefined && !lease.held()) {
        await pause(worker.name, STANDBY_WAIT_MS);
        continue;
      }
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
      const interval = waitBetweenTicks({
        intervalMs: worker.intervalMs,
        wokenByIndex: worker.wokenByIndex === true,
        pushConnected: indexPush?.connected() === true,
        safetyPollMs,
      });
      await pause(worker.name, Math.max(0, interval - (Date.now() - started)));
    }
  });
  return {
    wakeIndexDriven() {
      for (const worker of workers) if (worker.wokenByIndex === true) wakeWorker(worker.name);
    },
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
      // Only now: a standby taking over must not overlap the work this process is ending.
      await lease?.release();
    },
  };
}

/** Waits `ms`, or less if the worker is woken (also by a wake that came before the wait began). */
async function pause(name: string, ms: number): Promise<void> {
  if (wokenDuringTick.delete(name) || ms === 0) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wakers.set(name, () => {
      clearTimeout(timer);
      resolve();
    });
  });
  wakers.delete(name);
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

/** Every worker's last heartbeat (written above, one row per worker and host), for health. */
export async function readHeartbeats(store: Store) {
  return store.selectFrom("worker_heartbeat").selectAll().execute();
}
