import { spawn } from "node:child_process";
import { createServer, type Server, Socket } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { type PonderProcess, startPlainReplica, startPonder } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { type PostgresServer, startPostgresServer } from "../local/postgres-server.js";
import { type CreatedSession, sessionBody } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The plain replica (api/replica/plain-server.ts, `npm run serve:replica`) beside a `ponder serve`
// replica, both on the views schema of one indexer on Postgres: what one answers, the other answers.

const VIEWS_SCHEMA = "settlement";

let server: PostgresServer;
let storeUrl: string;
let stack: TestStack;
let plain: PonderProcess;
let ponderServe: PonderProcess;
const extraReplicas: PonderProcess[] = [];

function replicaEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(stack.serviceEnv).filter(([name]) => name !== "DATABASE_VIEWS_SCHEMA"));
  return { ...env, DATABASE_SCHEMA: VIEWS_SCHEMA, WORKERS: "off" };
}

type Answer = { status: number; body: Record<string, unknown>; headers: Headers };

async function call(
  replica: PonderProcess,
  path: string,
  init: { json?: unknown; authorization?: string | null } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  const authorization = init.authorization === undefined ? `Bearer ${stack.local.partner.apiKey}` : init.authorization;
  if (authorization !== null) headers.Authorization = authorization;
  if (init.json !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${replica.baseUrl}${path}`, {
    method: init.json === undefined ? "GET" : "POST",
    headers,
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: response.status, body, headers: response.headers };
}

async function createSessionOn(replica: PonderProcess): Promise<CreatedSession> {
  const answer = await call(replica, "/v1/checkout/sessions", { json: sessionBody({ certificate: { enabled: false } }) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body as unknown as CreatedSession;
}

async function storeQuery(text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client(storeUrl);
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/** Resolves once nothing accepts a connection on the port. */
function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
    socket.connect(port, "127.0.0.1");
  });
}

beforeAll(async () => {
  server = await startPostgresServer();
  try {
    storeUrl = await server.createDatabase("settlement_store");
    stack = await startTestStack({
      env: {
        STORE_URL: storeUrl,
        DATABASE_URL: await server.createDatabase("settlement_index"),
        DATABASE_SCHEMA: "settlement_v1",
        DATABASE_VIEWS_SCHEMA: VIEWS_SCHEMA,
      },
    });
    [plain, ponderServe] = await Promise.all([
      findFreePort().then((port) => startPlainReplica({ root: PROJECT_ROOT, port, env: replicaEnv() })),
      findFreePort().then((port) => startPonder({ root: PROJECT_ROOT, command: "serve", port, env: replicaEnv() })),
    ]);
  } catch (error) {
    await Promise.all([plain?.stop(), ponderServe?.stop()]);
    await stack?.stop();
    await server.stop();
    throw error;
  }
}, 240_000);

afterAll(async () => {
  await Promise.all([plain?.stop(), ponderServe?.stop(), ...extraReplicas.map((replica) => replica.stop())]);
  await stack?.stop();
  await server?.stop();
}, 60_000);

describe("an API replica as a plain Hono server (npm run serve:replica)", () => {
  it("serves a session read and a hash submission, and its own /health, /ready and /status", async () => {
    for (const path of ["/health", "/ready"]) expect((await call(plain, path, { authorization: null })).status, path).toBe(200);
    const status = await call(plain, "/status", { authorization: null });
    const fromPonder = await call(ponderServe, "/status", { authorization: null });
    expect(Object.keys(status.body)).toEqual(Object.keys(fromPonder.body));
    expect((status.body.local as { id: number }).id).toBe(stack.chain.id);

    const session = await createSessionOn(plain);
    const read = await call(plain, `/v1/checkout/sessions/${session.id}`);
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.status).toBe("awaiting_payment");
    const paid = await stack.payUsdc({ from: 4, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    // Once the index holds the transfer the submission is answered from it, as on any replica.
    const submitted = await waitFor(
      async () => {
        const answer = await call(plain, "/v1/public/checkout/payments", {
          json: { clientToken: session.clientToken, transactionHash: paid.hash },
          authorization: null,
        });
        return answer.status === 200 ? answer : undefined;
      },
      { what: "the hash submission answered 200 by the plain replica" },
    );
    expect(["settled", "payment_pending"]).toContain(submitted.body.status);
    await waitFor(
      async () => ((await call(plain, `/v1/checkout/sessions/${session.id}`)).body.status === "settled" ? true : undefined),
      { what: "the session settled, read on the plain replica" },
    );
    const onPonder = await call(ponderServe, `/v1/checkout/sessions/${session.id}`);
    const onPlain = await call(plain, `/v1/checkout/sessions/${session.id}`);
    expect(onPlain.body).toEqual(onPonder.body);
    // The customer's status poll and GraphQL over the index, as `ponder serve` served them.
    const poll = await call(plain, `/v1/public/checkout/sessions/${session.id}/validate`, {
      json: { clientToken: session.clientToken },
      authorization: null,
    });
    expect(poll.status, JSON.stringify(poll.body)).toBe(200);
    const graphql = await call(plain, "/graphql", {
      json: { query: "{ usdcTransfers(limit: 5) { items { transactionHash } } }" },
      authorization: null,
    });
    expect(JSON.stringify(graphql.body)).toContain(paid.hash.toLowerCase());
  }, 120_000);

  it("refuses as the ponder serve replica does: no key, a wrong key, and 503 store_unavailable with Retry-After while Postgres is down", async () => {
    const session = await createSessionOn(plain);
    for (const authorization of [null, "Bearer sk_test_not_a_key"]) {
      const [fromPlain, fromPonder] = await Promise.all([
        call(plain, `/v1/checkout/sessions/${session.id}`, { authorization }),
        call(ponderServe, `/v1/checkout/sessions/${session.id}`, { authorization }),
      ]);
      expect(fromPlain.status, JSON.stringify(fromPlain.body)).toBe(401);
      expect(fromPlain.body.code).toBe(fromPonder.body.code);
      expect(fromPlain.headers.get("www-authenticate")).toBe(fromPonder.headers.get("www-authenticate"));
      expect(fromPlain.headers.get("content-type")).toBe(fromPonder.headers.get("content-type"));
    }
    server.control("stop");
    try {
      for (const replica of [plain, ponderServe]) {
        const answer = await call(replica, `/v1/checkout/sessions/${session.id}`);
        expect(answer.status, `${replica.baseUrl}: ${JSON.stringify(answer.body)}`).toBe(503);
        expect(answer.body.code).toBe("store_unavailable");
        expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
      }
      // A balancer's check of the plain replica's own /ready sees it cannot serve the index now.
      expect((await call(plain, "/ready", { authorization: null })).status).toBe(503);
    } finally {
      server.control("start");
    }
    await waitFor(async () => ((await call(plain, `/v1/checkout/sessions/${session.id}`)).status === 200 ? true : undefined), {
      what: "the plain replica answering again once Postgres is back",
    });
    expect(plain.process.exitCode, plain.output().slice(-3000)).toBeNull();
  }, 120_000);

  it("drains on SIGTERM: stops accepting, answers the request under way, then exits 0", async () => {
    const replica = await startPlainReplica({ root: PROJECT_ROOT, port: await findFreePort(), env: replicaEnv() });
    extraReplicas.push(replica);
    const session = await createSessionOn(replica);
    const locker = new pg.Client(storeUrl);
    await locker.connect();
    try {
      // The read of the session waits on this lock: a request under way when SIGTERM comes.
      await locker.query("begin; lock table checkout_session in access exclusive mode");
      const underWay = call(replica, `/v1/checkout/sessions/${session.id}`).catch(
        (error: Error): Answer => ({ status: 0, body: { error: String(error.cause ?? error) }, headers: new Headers() }),
      );
      await waitFor(
        async () => {
          const rows = await storeQuery(
            "select 1 from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%checkout_session%'",
          );
          return rows.length > 0 ? true : undefined;
        },
        { what: "the replica's read waiting on the lock" },
      );
      const exited = new Promise<number | null>((resolve) => replica.process.once("exit", (code) => resolve(code)));
      replica.process.kill("SIGTERM");
      await waitFor(async () => ((await refusesConnections(replica.port)) ? true : undefined), {
        what: "the draining replica refusing new connections",
      });
      expect(replica.process.exitCode, "still answering the request under way").toBeNull();
      await locker.query("commit");
      const answer = await underWay;
      console.log(`plain replica drain: the request under way answered ${answer.status}; exit code ${await exited}`);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.id).toBe(session.id);
      expect(await exited).toBe(0);
    } finally {
      await locker.end();
    }
  }, 120_000);

  it("exits 1 naming PORT when its port is taken", async () => {
    const holder: Server = createServer();
    const port = await findFreePort();
    await new Promise<void>((resolve) => holder.listen(port, "127.0.0.1", resolve));
    try {
      const child = spawn(process.execPath, [join(PROJECT_ROOT, "bin", "serve-replica.js"), "--hostname", "127.0.0.1"], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, ...replicaEnv(), PORT: String(port) },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode)));
      expect(code, output).toBe(1);
      expect(output).toContain(`port ${port} on 127.0.0.1 is taken by another process`);
      expect(output).toContain("PORT");
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 120_000);
});
