import { connect, createServer, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INDEX_SESSION_NAME, indexChannel, listenToIndex } from "../api/indexed/index-notifications.js";
import { migrateStore, openPostgresStore, type Store } from "../api/store/open-store.js";
import { type RunningWorkers, runWorkers } from "../api/workers/run-worker.js";
import { holdWorkerLease, LEASE_SESSION_NAME, type WorkerLease } from "../api/workers/worker-lease.js";
import { createTestDatabase, type TestDatabase, waitFor } from "./support/test-stack.js";

// The fleet's two mechanisms on a real PostgreSQL server (the run's, test/support/global-setup.ts),
// without a chain: the workers' lease, and the session that hears the index's notifications.
// A connection that drops is a real one: its backend is ended with pg_terminate_backend.

let database: TestDatabase;
let admin: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  admin = new pg.Client(database.url);
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

/** The sessions named `settlement <name>` on this test's database, with what each ran last and whether it holds an advisory lock. */
async function sessions(name: string): Promise<{ pid: number; query: string; holdsLock: boolean }[]> {
  const { rows } = await admin.query(
    `select a.pid, a.query,
            exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted) as "holdsLock"
       from pg_stat_activity a
      where a.datname = current_database() and a.application_name = $1`,
    [`settlement ${name}`],
  );
  return rows;
}

/** A worker that counts its ticks (counted as a tick starts: none starts once the lease is seen lost). */
function countingWorker(name: string, options: { intervalMs?: number; wokenByIndex?: boolean } = {}) {
  const worker = {
    name,
    intervalMs: options.intervalMs ?? 10,
    wokenByIndex: options.wokenByIndex,
    ticks: 0,
    tick: async () => void worker.ticks++,
  };
  return worker;
}

/**
 * A TCP gate in front of the Postgres server: what a process's network is to it. Cut, it
 * drops every connection through it and refuses new ones (the process is cut off, as when
 * its host loses the network or dies); opened again, it lets connections through.
 */
async function postgresGate(
  serverUrl: string,
): Promise<{ url: string; cut: () => void; open: () => void; close: () => Promise<void> }> {
  const target = new URL(serverUrl);
  const sockets = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) return void client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(serverUrl);
  url.port = String(port);
  return {
    url: url.toString(),
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    open() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("the workers' lease: one set of workers acts at a time on a Postgres store", () => {
  let storeA: Store;
  let storeB: Store;

  beforeAll(async () => {
    storeA = openPostgresStore(database.url);
    storeB = openPostgresStore(database.url);
    await migrateStore(storeA);
  });

  afterAll(async () => {
    await storeA?.destroy();
    await storeB?.destroy();
  });

  it("lets only the holder's workers tick; when the holder is cut off the other takes over, and shutdown hands it on", async () => {
    const a = countingWorker("lease-a");
    const b = countingWorker("lease-b");
    // Process A reaches Postgres through a gate the test can cut.
    const gate = await postgresGate(database.url);
    const leaseA = holdWorkerLease({ storeUrl: gate.url });
    let leaseB: WorkerLease | undefined;
    let runA: RunningWorkers | undefined;
    let runB: RunningWorkers | undefined;
    try {
      await waitFor(async () => (leaseA.held() ? true : undefined), { what: "the first process to take the lease" });
      runA = runWorkers(storeA, [a], { lease: leaseA });
      leaseB = holdWorkerLease({ storeUrl: database.url });
      runB = runWorkers(storeB, [b], { lease: leaseB });

      // B's session has asked for the lock and been refused (its last statement), while A's workers tick.
      await waitFor(
        async () => {
          const found = await sessions(LEASE_SESSION_NAME);
          const refused = found.filter((session) => !session.holdsLock && session.query.includes("pg_try_advisory_lock"));
          return found.length === 2 && refused.length === 1 && a.ticks > 0 ? true : undefined;
        },
        { what: "A ticking, and B's session refused the lock" },
      );
      expect(leaseB.held()).toBe(false);
      expect(b.ticks).toBe(0);

      // A's connection drops and it cannot reconnect: it stops at once, Postgres frees the lock with
      // the session, and B takes over.
      gate.cut();
      await waitFor(async () => (leaseA.held() ? undefined : true), { what: "A noticing it lost the lease" });
      const ticksOfA = a.ticks;
      await waitFor(async () => (b.ticks > 0 ? true : undefined), { what: "B taking the lease over and ticking" });
      expect(leaseB.held()).toBe(true);
      // A's network comes back: it reconnects and asks again (refused: B holds it), and has not
      // ticked since it lost the lease.
      gate.open();
      await waitFor(
        async () => {
          const found = await sessions(LEASE_SESSION_NAME);
          return found.length === 2 &&
            found.some((session) => !session.holdsLock && session.query.includes("pg_try_advisory_lock"))
            ? true
            : undefined;
        },
        { what: "A's new session refused the lock" },
      );
      expect(leaseA.held()).toBe(false);
      expect(a.ticks).toBe(ticksOfA);

      // B shuts down: its stop releases the lease once its workers are done, and A takes over.
      await runB.stop(1_000);
      runB = undefined;
      const ticksOfB = b.ticks;
      await waitFor(async () => (a.ticks > ticksOfA ? true : undefined), { what: "A taking the lease back after B's shutdown" });
      expect(leaseA.held()).toBe(true);
      expect(b.ticks).toBe(ticksOfB);
    } finally {
      await runB?.stop(1_000);
      await (runA?.stop(1_000) ?? leaseA.release());
      await leaseB?.release();
      await gate.close();
    }
    // Postgres ends a session's backend (and frees its lock) a moment after the client has gone: a
    // full run under load (2026-11-28) still saw A's session, lock held, right after its release.
    await waitFor(async () => ((await sessions(LEASE_SESSION_NAME)).length === 0 ? true : undefined), {
      what: "every lease session gone once both stopped",
    });
  });
});

describe("the index's notifications wake the workers that follow the index", () => {
  it("wakes a worker whose safety poll is 10 minutes on each notification, and listens again after its session drops", async () => {
    const schema = "wake_test";
    const worker = countingWorker("woken-by-index", { intervalMs: 600_000, wokenByIndex: true });
    const changes: boolean[] = [];
    let running: RunningWorkers | undefined;
    const notifications = listenToIndex({
      databaseUrl: database.url,
      schema,
      onIndexed: () => running?.wakeIndexDriven(),
      onConnectionChange: (connected) => {
        changes.push(connected);
        running?.wakeIndexDriven();
      },
    });
    const store = openPostgresStore(database.url);
    try {
      await waitFor(async () => (notifications.connected() ? true : undefined), { what: "the listening session" });
      running = runWorkers(store, [worker], { indexPush: notifications, safetyPollMs: 600_000 });
      await waitFor(async () => (worker.ticks === 1 ? true : undefined), { what: "the first tick" });

      // What Ponder's trigger sends when it commits a block ('[]': a block with no event of ours).
      await admin.query("select pg_notify($1, '[]')", [indexChannel(schema)]);
      await waitFor(async () => (worker.ticks === 2 ? true : undefined), { what: "a tick on the notification" });
      // Another schema's index (another build) wakes nothing.
      await admin.query("select pg_notify($1, '[]')", [indexChannel("another_build")]);

      const [listening] = await sessions(INDEX_SESSION_NAME);
      expect(listening).toBeDefined();
      await admin.query("select pg_terminate_backend($1)", [listening!.pid]);
      // A new session listens again (re-LISTEN), and the drop and the return each woke the worker.
      await waitFor(
        async () => {
          const found = await sessions(INDEX_SESSION_NAME);
          return notifications.connected() && found.length === 1 && found[0]!.pid !== listening!.pid ? true : undefined;
        },
        { what: "a new listening session" },
      );
      expect(changes).toEqual([true, false, true]);
      await waitFor(async () => (worker.ticks >= 4 ? true : undefined), { what: "the ticks on the drop and on the return" });
      const before = worker.ticks;
      await admin.query("select pg_notify($1, '[\"usdc_transfer\"]')", [indexChannel(schema)]);
      await waitFor(async () => (worker.ticks === before + 1 ? true : undefined), {
        what: "a tick on a notification after the return",
      });
    } finally {
      await running?.stop(1_000);
      await notifications.close();
      await store.destroy();
    }
    expect(notifications.connected()).toBe(false);
    expect(await sessions(INDEX_SESSION_NAME)).toEqual([]);
  });
});
