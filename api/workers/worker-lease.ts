import { logJson } from "../logging/redact.js";
import { keepPostgresSession } from "../store/postgres-session.js";

export type WorkerLease = {
  /** True while this process holds the lease: its workers may tick. */
  held(): boolean;
  /** Called each time the lease is taken (true) or lost (false). */
  onChange(listener: (held: boolean) => void): void;
  /** Gives the lease up for good (shutdown): another process takes it within its retry. */
  release(): Promise<void>;
};

/**
 * The advisory lock every process of one store competes for. Any fixed number
 * works: advisory locks are per database, and the store has a database of its own.
 */
const LEASE_LOCK_KEY = "4740531226452094103";

/** The session's name in the log and in `pg_stat_activity` (`settlement worker lease`). */
export const LEASE_SESSION_NAME = "worker lease";

/** How often a process without the lease tries again, and the holder checks its session. */
export const LEASE_RETRY_MS = 1_000;

/**
 * At most one process's workers act at a time on a Postgres store: the lease is a
 * session-level advisory lock (`pg_try_advisory_lock`) held on a session of its own.
 * Postgres releases it when the holder's session ends, whether the process exited,
 * crashed or lost its connection, so a standby takes over within about a second of
 * the server noticing. The holder checks its session every second: a session that
 * dropped (or stopped answering) loses the lease here at once, and the workers stop
 * ticking until it is taken again.
 */
export function holdWorkerLease(params: { storeUrl: string; retryMs?: number }): WorkerLease {
  const retryMs = params.retryMs ?? LEASE_RETRY_MS;
  const listeners: ((held: boolean) => void)[] = [];
  let held = false;
  const setHeld = (value: boolean) => {
    if (held === value) return;
    held = value;
    logJson({ level: "info", msg: value ? "worker lease taken" : "worker lease lost" });
    for (const listener of listeners) listener(value);
  };
  const tryTake = async (client: { query: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }> }) => {
    const { rows } = await client.query("select pg_try_advisory_lock($1::bigint) as taken", [LEASE_LOCK_KEY]);
    if ((rows[0] as { taken: boolean }).taken) setHeld(true);
  };
  const session = keepPostgresSession({
    url: params.storeUrl,
    name: LEASE_SESSION_NAME,
    onOpen: tryTake,
    onLost: () => setHeld(false),
    checkEveryMs: retryMs,
    // The lock is re-entrant within a session: it is asked for only while not held.
    check: async (client) => (held ? void (await client.query("select 1")) : tryTake(client)),
  });
  return {
    held: () => held,
    onChange(listener) {
      listeners.push(listener);
    },
    async release() {
      // Ending the session is what frees the lock (and works even when the session is stuck).
      await session.close();
      setHeld(false);
    },
  };
}
