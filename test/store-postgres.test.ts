import { createServer } from "node:http";
import pg from "pg";
import { expect, it } from "vitest";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { startPonder } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { type PostgresServer, startPostgresServer } from "../local/postgres-server.js";
import { createSession, sessionBody, submitHash } from "./support/checkout-helpers.js";
import { describeStoreOnPostgres } from "./support/store-on-postgres.js";
import { startTestStack, waitFor } from "./support/test-stack.js";

// The scale-out shape: a PostgreSQL server holds the service's own state
// (STORE_URL) and, in a database of its own, Ponder's index (DATABASE_URL). The
// server is this file's own, so that a test can restart it (issue 42) without
// touching the other files' databases.
let storeServer: PostgresServer;
let storeDatabase: { url: string };
let indexDatabase: { url: string };

async function query(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

describeStoreOnPostgres("store and index on a PostgreSQL server (STORE_URL, DATABASE_URL)", {
  async start() {
    storeServer = await startPostgresServer();
    storeDatabase = { url: await storeServer.createDatabase("settlement_store") };
    indexDatabase = { url: await storeServer.createDatabase("settlement_index") };
    const drop = () => storeServer.stop();
    try {
      const stack = await startTestStack({
        env: {
          STORE_URL: storeDatabase.url,
          DATABASE_URL: indexDatabase.url,
          // The race below submits hashes in quick pairs: more than the 120 look-ups a minute an IP may make.
          LOOKUP_RATE_LIMIT: "100000",
          // The workers that follow the index look on their own only every 10 minutes: within
          // this file, only the index's notifications can wake them (docs/operations.md).
          WORKER_SAFETY_POLL_MS: "600000",
        },
      });
      return {
        stack,
        async stop() {
          await stack.stop();
          await drop();
        },
      };
    } catch (error) {
      await drop();
      throw error;
    }
  },
  async storedWhereExpected() {
    const store = await query(storeDatabase.url, "select count(*)::int as n from checkout_session");
    expect(store[0]!.n).toBeGreaterThanOrEqual(60);
    const tables = await query(
      indexDatabase.url,
      "select table_name from information_schema.tables where table_schema = 'public'",
    );
    expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining(["usdc_transfer", "certificate_mint"]));
  },
  moreTests(current) {
    it("settles a payment nobody reported once its block is indexed, woken by the index's notification, also after the listening session dropped", async () => {
      const { stack } = current();
      const payAndSettle = async () => {
        const session = await createSession(stack, { certificate: { enabled: false } });
        await stack.payUsdc({ from: 7, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
        // No hash is submitted and the safety poll is 10 minutes: only a wake settles it within the minute.
        await waitFor(
          async () => {
            const response = await stack.partnerFetch(`/v1/checkout/sessions/${session.id}`);
            return ((await response.json()) as { status: string }).status === "settled" ? true : undefined;
          },
          { timeoutMs: 60_000, what: "the payment settled by the woken settlement worker" },
        );
      };
      // What Ponder sends, heard on a session of the test's own: each indexed block notifies the
      // index schema's channel, a block with none of our events too (`[]`: the head moved).
      const heard: string[] = [];
      const listener = new pg.Client(indexDatabase.url);
      await listener.connect();
      try {
        listener.on("notification", (message) => heard.push(message.payload ?? ""));
        await listener.query('LISTEN "public_live_query"');
        await stack.testClient.mine({ blocks: 1 });
        await waitFor(async () => (heard.includes("[]") ? true : undefined), { what: "an empty block's notification" });
        await payAndSettle();
        expect(heard.some((payload) => (JSON.parse(payload) as string[]).includes("usdc_transfer"))).toBe(true);
      } finally {
        await listener.end();
      }

      // The listening session's backend ends (as when Postgres restarts): a new session listens again.
      const listening = async () =>
        (
          await query(
            indexDatabase.url,
            "select pid from pg_stat_activity where datname = current_database() and application_name = 'settlement index notifications'",
          )
        ).map((row) => Number(row.pid));
      const [before] = await listening();
      expect(before).toBeDefined();
      await query(indexDatabase.url, `select pg_terminate_backend(${before})`);
      await waitFor(
        async () => {
          const now = await listening();
          return now.length === 1 && now[0] !== before ? true : undefined;
        },
        { what: "a new session listening to the index" },
      );
      await payAndSettle();
    }, 150_000);

    it("runs an API replica (ponder serve) beside it: both answer, its workers stand by while the indexer's hold the lease, and each payment is settled and delivered once", async () => {
      const { stack, receiver } = current();
      const replica = await startPonder({
        root: PROJECT_ROOT,
        command: "serve",
        port: await findFreePort(),
        env: stack.serviceEnv,
      });
      try {
        const sessions = await Promise.all(
          Array.from({ length: 12 }, () => createSession(stack, { certificate: { enabled: false } })),
        );
        for (const [index, session] of sessions.entries()) {
          await stack.payUsdc({ from: 4 + (index % 3), to: session.payment.recipient, amount: BigInt(session.payment.amount) });
        }
        // The replica's workers are on (WORKERS defaults to on) but stand by: its lease session asks
        // for the lock and is refused, the indexer's process holds it.
        await waitFor(
          async () => {
            const leases = await query(
              storeDatabase.url,
              `select a.query, exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted) as held
                 from pg_stat_activity a where a.datname = current_database() and a.application_name = 'settlement worker lease'`,
            );
            const refused = leases.filter(
              (lease) => lease.held === false && String(lease.query).includes("pg_try_advisory_lock"),
            );
            return leases.length === 2 && refused.length === 1 ? true : undefined;
          },
          { what: "the replica's lease session refused while the indexer's holds the lease" },
        );
        const statusAt = async (baseUrl: string, id: string) => {
          const response = await fetch(`${baseUrl}/v1/checkout/sessions/${id}`, {
            headers: { Authorization: `Bearer ${stack.local.partner.apiKey}` },
          });
          return ((await response.json()) as { status: string }).status;
        };
        await waitFor(
          async () => {
            const statuses = await Promise.all(sessions.map((session) => statusAt(replica.baseUrl, session.id)));
            return statuses.every((status) => status === "settled") ? true : undefined;
          },
          { timeoutMs: 30_000, what: "every session settled, as the replica sees it" },
        );
        for (const session of sessions) expect(await statusAt(stack.ponder.baseUrl, session.id)).toBe("settled");
        // Nobody submitted a hash: the indexer's settlement worker found them in the index; the
        // replica's never ticked (a tick records a heartbeat named after its process).
        const beats = (await query(storeDatabase.url, "select id from worker_heartbeat")).map((row) => String(row.id));
        expect(beats.filter((id) => id.startsWith("settlement@"))).not.toHaveLength(0);
        expect(beats.filter((id) => id.endsWith(`:${replica.process.pid}`))).toEqual([]);
        // Each process's health says what its own workers do.
        const thisProcess = async (baseUrl: string) =>
          ((await (await fetch(`${baseUrl}/v1/health`)).json()) as { thisProcess: unknown }).thisProcess;
        expect(await thisProcess(stack.ponder.baseUrl)).toEqual({ workers: "acting", indexNotifications: "listening" });
        await waitFor(
          async () => {
            const replicaHere = (await thisProcess(replica.baseUrl)) as { indexNotifications: string };
            return replicaHere.indexNotifications === "listening" ? replicaHere : undefined;
          },
          { what: "the replica listening to the index" },
        ).then((replicaHere) => expect(replicaHere).toEqual({ workers: "standing_by", indexNotifications: "listening" }));

        const settledHooks = (orderId: string) =>
          receiver.acknowledged.filter(
            (hook) => hook.type === "purchase.settled" && JSON.parse(hook.rawBody.toString()).data.orderId === orderId,
          );
        await waitFor(async () => (sessions.every((session) => settledHooks(session.orderId).length > 0) ? true : undefined), {
          what: "purchase.settled delivered for every order",
        });
        // Give a second delivery, if the two dispatchers were to race, time to arrive.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        for (const session of sessions) expect(settledHooks(session.orderId)).toHaveLength(1);
        // And one event each in the outbox.
        const events = await query(storeDatabase.url, "select payload from event where type = 'purchase.settled'");
        const orderIds = events.map((row) => JSON.parse(String(row.payload)).data.orderId as string);
        for (const session of sessions) expect(orderIds.filter((id) => id === session.orderId)).toHaveLength(1);
      } finally {
        await replica.stop();
      }
    });

    it.each([
      // A replica, and an indexer on a schema of its own (so that, were the port let through, it
      // would start, index and serve on the next port rather than fail on the first one's schema lock).
      ["a replica (ponder serve)", "serve", {}],
      ["an indexer (ponder start)", "start", { DATABASE_SCHEMA: "port_taken_probe", WORKERS: "off" }],
    ] as const)("refuses to start %s on a port that is taken, instead of serving on the next one", async (_name, command, env) => {
      const { stack } = current();
      const port = await findFreePort();
      // Another process' server on it (one that answers, so that a readiness poll there is not left hanging).
      const taken = createServer((_request, response) => response.writeHead(503).end());
      await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
      try {
        const outcome = await startPonder({ root: PROJECT_ROOT, command, port, env: { ...stack.serviceEnv, ...env } }).then(
          async (started) => {
            await started.stop();
            return `served on port ${started.port}`;
          },
          (error: Error) => error.message,
        );
        expect(outcome).toMatch(/^ponder exited with code [1-9]/);
        expect(outcome).toContain(`port ${port} on 127.0.0.1 is taken`);
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    });

    it("answers two requests with one idempotency key at once with the same session, never a 500", async () => {
      const { stack } = current();
      for (let round = 0; round < 10; round++) {
        // A new order each round: both requests find no order and both create it.
        const body = sessionBody({ idempotencyKey: `race-${round}-${Date.now()}` });
        const answers = await Promise.all(
          [0, 1].map(async () => {
            const response = await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: body });
            return { status: response.status, body: (await response.json()) as { id?: string; code?: string } };
          }),
        );
        for (const answer of answers) expect(answer.status, `round ${round}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
        expect(answers[0]!.body.id).toBe(answers[1]!.body.id);
      }
    });

    it("answers a hash sent twice at once for the transfer that settles the session as settled or pending, never duplicate_payment", async () => {
      const { stack } = current();
      for (let round = 0; round < 10; round++) {
        const session = await createSession(stack, { certificate: { enabled: false } });
        const paid = await stack.payUsdc({ from: 4, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
        // Pairs race each other and the settlement worker until the payment is recorded settled.
        await waitFor(
          async () => {
            const answers = await Promise.all(
              [0, 1].map(async () => {
                const response = await submitHash(stack, session.clientToken, paid.hash);
                return { status: response.status, body: (await response.json()) as { status?: string; code?: string } };
              }),
            );
            for (const answer of answers) expect(answer.status, `round ${round}: ${JSON.stringify(answer.body)}`).toBe(200);
            return answers.some((answer) => answer.body.status === "settled") ? true : undefined;
          },
          { intervalMs: 10, what: `round ${round}: a submission answering settled` },
        );
      }
    });

    it("keeps the indexer and a replica alive through a Postgres restart: 503 store_unavailable while it is away, 200 when it is back", async () => {
      const { stack } = current();
      const replica = await startPonder({
        root: PROJECT_ROOT,
        command: "serve",
        port: await findFreePort(),
        env: stack.serviceEnv,
      });
      try {
        const session = await createSession(stack, { certificate: { enabled: false } });
        const read = (baseUrl: string) =>
          fetch(`${baseUrl}/v1/checkout/sessions/${session.id}`, {
            headers: { Authorization: `Bearer ${stack.local.partner.apiKey}` },
            signal: AbortSignal.timeout(20_000),
          });
        const bothAnswer = async () => {
          const statuses = await Promise.all(
            [stack.ponder.baseUrl, replica.baseUrl].map((url) =>
              read(url).then(
                (response) => response.status,
                () => 0,
              ),
            ),
          );
          return statuses.every((status) => status === 200) ? true : undefined;
        };
        // Both processes hold idle pooled connections to the store, which the restart ends.
        await waitFor(bothAnswer, { what: "both processes to read the session" });
        storeServer.control("restart");
        await waitFor(bothAnswer, { timeoutMs: 30_000, what: "both processes to answer after the restart" });

        // An outage long enough to be asked during: an answer that says when to come back.
        storeServer.control("stop");
        try {
          for (const url of [stack.ponder.baseUrl, replica.baseUrl]) {
            const response = await read(url);
            expect(response.status, url).toBe(503);
            expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
            expect(((await response.json()) as { code: string }).code).toBe("store_unavailable");
          }
        } finally {
          storeServer.control("start");
        }
        await waitFor(bothAnswer, { timeoutMs: 30_000, what: "both processes to answer once Postgres is back" });
        // The index (on the same server) goes on too: a payment made now settles.
        await stack.payUsdc({ from: 5, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
        await waitFor(
          async () => {
            const response = await read(replica.baseUrl);
            return ((await response.json()) as { status: string }).status === "settled" ? true : undefined;
          },
          { timeoutMs: 30_000, what: "the payment made after the outage to settle" },
        );
        expect(stack.serviceRestarts(), stack.ponder.output().slice(-3000)).toBe(0);
        expect(replica.process.exitCode, replica.output().slice(-3000)).toBeNull();
      } finally {
        await replica.stop();
      }
    });
  },
});
