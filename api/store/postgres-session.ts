import pg from "pg";
import { logJson, redactUrl } from "../logging/redact.js";

export type PostgresSession = {
  /** True while a session is open and its last check answered. */
  open(): boolean;
  /** Ends the session for good (no reconnect); what the session held is released by Postgres. */
  close(): Promise<void>;
};

/** The first waits after a lost session, doubled on each failed attempt up to RECONNECT_MAX_MS. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;

/**
 * How long to wait before the `failures`-th attempt in a row to open a session:
 * at once after a session that had been open (failures 0), then doubling, capped,
 * so a restarting server is found again within seconds without being hammered.
 */
export function reconnectDelayMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(RECONNECT_MAX_MS, RECONNECT_FIRST_MS * 2 ** Math.min(failures - 1, 20));
}

/**
 * One dedicated Postgres session (not a pooled connection: what it holds, a LISTEN or
 * a session advisory lock, belongs to the session), kept open for the life of the
 * process. A dropped connection (the server restarted, the backend was terminated, the
 * network failed, a check timed out) is noticed, reported through `onLost`, and a new
 * session opened with backoff; `onOpen` runs on each new one. `check` runs every
 * `checkEveryMs` while the session is open: a connection that fails silently is found
 * by its check timing out, not only when the kernel gives up on the socket.
 */
export function keepPostgresSession(params: {
  url: string;
  /** For the log, and the session's `application_name` (what `pg_stat_activity` shows the operator). */
  name: string;
  onOpen: (client: pg.Client) => Promise<void>;
  /** Called on every session that ends other than by `close` (also one that never fully opened); may repeat. */
  onLost: () => void;
  checkEveryMs: number;
  check: (client: pg.Client) => Promise<void>;
}): PostgresSession {
  let closed = false;
  let current: pg.Client | undefined;
  let isOpen = false;
  let wakeSleep: (() => void) | undefined;
  // A query that never answers must not hold the loop: it counts as a lost session.
  const queryTimeoutMs = Math.max(2_000, params.checkEveryMs * 2);

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeSleep = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wakeSleep = undefined;
    });

  const lose = (client: pg.Client, error: unknown) => {
    if (current !== client) return;
    current = undefined;
    const wasOpen = isOpen;
    isOpen = false;
    client.end().catch(() => undefined);
    if (wasOpen) logJson({ level: "warn", msg: "postgres session lost", session: params.name, error: String(error) });
    // Also when lost while `onOpen` ran: what it took (a lock) went with the session.
    params.onLost();
    wakeSleep?.();
  };

  const loop = (async () => {
    let failures = 0;
    while (!closed) {
      await sleep(reconnectDelayMs(failures));
      if (closed) break;
      const client = new pg.Client({
        connectionString: params.url,
        application_name: `settlement ${params.name}`,
        keepAlive: true,
        connectionTimeoutMillis: queryTimeoutMs,
        query_timeout: queryTimeoutMs,
      });
      current = client;
      // Without a listener an 'error' event (the server went away while idle) would end the process.
      client.on("error", (error) => lose(client, error));
      client.on("end", () => lose(client, "connection ended"));
      let opened = false;
      try {
        await client.connect();
        await params.onOpen(client);
        if (current !== client || closed) throw new Error("session lost while opening");
        isOpen = true;
        opened = true;
        failures = 0;
        logJson({ level: "info", msg: "postgres session open", session: params.name, url: redactUrl(params.url) });
        while (current === client && !closed) {
          await sleep(params.checkEveryMs);
          if (current !== client || closed) break;
          await params.check(client);
        }
      } catch (error) {
        // Shutting down ends a session that was still opening: nothing to report.
        if (closed) break;
        if (!opened) failures++;
        lose(client, error);
        if (failures === 1) {
          logJson({ level: "warn", msg: "postgres session cannot open", session: params.name, error: String(error) });
        }
      }
    }
  })();

  return {
    open: () => isOpen,
    async close() {
      closed = true;
      const client = current;
      current = undefined;
      isOpen = false;
      wakeSleep?.();
      await client?.end().catch(() => undefined);
      await loop;
    },
  };
}
