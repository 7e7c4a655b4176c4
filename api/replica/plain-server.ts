import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { drizzle } from "drizzle-orm/node-postgres";
import { Hono } from "hono";
import { cors } from "hono/cors";
import pg from "pg";
import { graphql } from "ponder";
import * as ponderSchema from "../../ponder.schema";
import { createApp } from "../app.js";
import { prepareStart } from "../config/startup.js";
import { refuseClosedPreflightsInServer } from "../http/cors-policy.js";
import { createIndexedChain, type PonderDb } from "../indexed/indexed-chain.js";
import { logJson } from "../logging/redact.js";
import { createServiceContext } from "../service.js";
import { migrateStore, openStore } from "../store/open-store.js";

/**
 * An API replica of the fleet as a plain Hono server, outside Ponder (docs/deploy.md, "The
 * fleet"; why: docs/architecture.md, "Why replicas are a plain Hono server"). It serves what a
 * `ponder serve` replica served: our app (api/app.ts), `/graphql` over the index, and its own
 * `/health`, `/ready`, `/status` and `/metrics`. It reads the index read-only through the views
 * schema (`DATABASE_SCHEMA`, the stable name the indexer's `--views-schema` keeps pointing at the
 * current build) and the store through Kysely; it runs no worker and keeps nothing but caches.
 */

/** How long a drain waits for requests under way before it cuts their connections. */
const DRAIN_LIMIT_MS = 25_000;

/** What the process was asked to listen on: `PORT` wins over `--port`, as Ponder reads it. */
export function replicaListenAddress(argv: readonly string[], env: NodeJS.ProcessEnv): { port: number; hostname?: string } {
  const option = (...names: string[]) => {
    for (const name of names) {
      const index = argv.indexOf(name);
      if (index !== -1) return argv[index + 1];
    }
    return undefined;
  };
  const port = Number(env.PORT ?? option("--port", "-p") ?? Number.NaN);
  const hostname = option("--hostname", "-H");
  return hostname === undefined ? { port } : { port, hostname };
}

/** A replica's refusal to start: the message names what to change. */
export class ReplicaStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReplicaStartError";
  }
}

export type PlainReplica = {
  server: Server;
  port: number;
  /** Stops accepting, lets the requests under way finish, then closes the databases. */
  drain: () => Promise<void>;
};

/**
 * The read-only pool over the views schema: the settings Ponder's own `ponder serve` gives
 * its readonly pool (`node_modules/ponder/dist/esm/utils/pg.js`), so that the two kinds of
 * replica read the index alike.
 */
function openIndexPool(databaseUrl: string, viewsSchema: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 28,
    application_name: `${viewsSchema}_plain_replica`,
    statement_timeout: 30_000,
    connectionTimeoutMillis: 5_000,
    options: `-c search_path="${viewsSchema.replaceAll('"', '""')}" -c default_transaction_read_only=on -c lock_timeout=500ms`,
  });
  // A connection Postgres ends (a restart) is an 'error' event; unheard, it would end the process.
  const connectionLost = (error: Error) =>
    logJson({
      level: "warn",
      msg: "An index connection was closed by Postgres; the next query opens another",
      error: error.message,
    });
  pool.on("error", connectionLost);
  pool.on("connect", (client) => client.on("error", connectionLost));
  return pool;
}

/** Ponder's checkpoint string: timestamp (10 digits), chain id (16), block number (16). */
function decodeCheckpoint(checkpoint: string): { blockTimestamp: number; blockNumber: number } {
  return { blockTimestamp: Number(checkpoint.slice(0, 10)), blockNumber: Number(checkpoint.slice(26, 42)) };
}

export async function startPlainReplica(params: {
  env: NodeJS.ProcessEnv;
  port: number;
  hostname?: string;
}): Promise<PlainReplica> {
  const { env } = params;
  if (!Number.isInteger(params.port) || params.port <= 0 || params.port > 65_535)
    throw new ReplicaStartError("Set the replica's port: PORT (or --port), for example PORT=4069.");
  if (env.DATABASE_URL === undefined || env.DATABASE_URL === "")
    throw new ReplicaStartError(
      "A replica reads the index on a Postgres server: set DATABASE_URL (and DATABASE_SCHEMA to the indexer's views schema).",
    );
  const viewsSchema = env.DATABASE_SCHEMA ?? "public";
  const config = await prepareStart(env, "replica", { indexSchema: viewsSchema });
  const store = openStore(config);
  await migrateStore(store);
  const pool = openIndexPool(env.DATABASE_URL, viewsSchema);
  const db = drizzle(pool, { casing: "snake_case", schema: ponderSchema }) as unknown as PonderDb;
  const indexIsReady = async () => {
    const result = await pool.query<{ is_ready: number | null }>(
      "select (value->>'is_ready')::int as is_ready from _ponder_meta where key = 'app'",
    );
    return result.rows[0]?.is_ready === 1;
  };
  const context = createServiceContext(config, store, createIndexedChain({ db, schema: ponderSchema }), {
    indexes: false,
    isLive: indexIsReady,
  });
  const app = createApp(context);

  let inFlight = 0;
  let requests = 0;
  let draining = false;
  const hono = new Hono();
  hono.use("*", async (c, next) => {
    inFlight++;
    requests++;
    try {
      await next();
    } finally {
      inFlight--;
      // Draining: the connection ends with this answer, so the balancer opens its next one elsewhere.
      if (draining) c.res.headers.set("Connection", "close");
    }
  });
  // Ponder's server answers every path with this policy ahead of the app; the app then closes
  // the portals' and partners' routes (api/http/cors-policy.ts). The same here.
  hono.use("*", cors({ origin: "*", maxAge: 86_400 }));
  hono.get("/health", (c) => c.text("", 200));
  // While Postgres is away these two answer 503, as a balancer's check expects, not a 500.
  hono.get("/ready", async (c) => {
    const ready = await indexIsReady().catch(() => undefined);
    if (ready === undefined) return c.text("The index cannot be read.", 503);
    return ready ? c.text("", 200) : c.text("Historical indexing is not complete.", 503);
  });
  hono.get("/status", async (c) => {
    const result = await pool
      .query<{ chain_name: string; chain_id: number | string; latest_checkpoint: string }>(
        "select chain_name, chain_id, latest_checkpoint from _ponder_checkpoint order by chain_id",
      )
      .catch(() => undefined);
    if (result === undefined) return c.text("The index cannot be read.", 503);
    const status: Record<string, { id: number; block: { number: number; timestamp: number } }> = {};
    for (const row of result.rows) {
      const { blockNumber, blockTimestamp } = decodeCheckpoint(row.latest_checkpoint);
      status[row.chain_name] = { id: Number(row.chain_id), block: { number: blockNumber, timestamp: blockTimestamp } };
    }
    return c.json(status);
  });
  hono.get("/metrics", (c) =>
    c.text(
      [
        "# TYPE settlement_replica_http_requests_total counter",
        `settlement_replica_http_requests_total ${requests}`,
        "# TYPE settlement_replica_http_requests_in_flight gauge",
        `settlement_replica_http_requests_in_flight ${inFlight}`,
        "# TYPE settlement_replica_index_pool_connections gauge",
        `settlement_replica_index_pool_connections{kind="total"} ${pool.totalCount}`,
        `settlement_replica_index_pool_connections{kind="idle"} ${pool.idleCount}`,
        `settlement_replica_index_pool_connections{kind="waiting"} ${pool.waitingCount}`,
        "",
      ].join("\n"),
    ),
  );
  // Ponder's GraphQL middleware reads its query builder from this global, which a Ponder
  // process sets; a query builder is Drizzle with `raw` and a `wrap(label?, query)`.
  const queryBuilder = Object.assign(db, {
    raw: db,
    wrap: (...args: unknown[]) => {
      const query = (typeof args[0] === "function" ? args[0] : args[1]) as (qb: unknown) => Promise<unknown>;
      return query(queryBuilder);
    },
  });
  (globalThis as { PONDER_DATABASE?: unknown }).PONDER_DATABASE = { readonlyQB: queryBuilder };
  hono.use("/graphql", graphql({ db, schema: ponderSchema } as unknown as Parameters<typeof graphql>[0]));
  hono.route("/", app);

  // Preflights of closed routes are answered before Hono, as in a Ponder process.
  refuseClosedPreflightsInServer();
  const server = createAdaptorServer({ fetch: hono.fetch, createServer: http.createServer }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const where = `port ${params.port}${params.hostname === undefined ? "" : ` on ${params.hostname}`}`;
      reject(
        error.code === "EADDRINUSE"
          ? new ReplicaStartError(
              `The replica's ${where} is taken by another process: stop it, or give this replica another port (PORT).`,
            )
          : error,
      );
    });
    server.listen(params.port, params.hostname, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  let drained: Promise<void> | undefined;
  const drain = () => {
    drained ??= (async () => {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections between two requests end now; those carrying one end after its answer.
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      const limit = setTimeout(() => server.closeAllConnections(), DRAIN_LIMIT_MS);
      server.closeIdleConnections();
      await closed;
      clearInterval(idle);
      clearTimeout(limit);
      context.indexerWatchdog?.stop();
      await Promise.allSettled([store.destroy(), pool.end()]);
    })();
    return drained;
  };
  return { server, port, drain };
}

/**
 * `npm run serve:replica` (bin/serve-replica.js): starts a replica and drains it on SIGTERM or
 * SIGINT. Resolves with the exit code: 0 once drained, 1 when it could not start (the message
 * names the variable to change).
 */
export async function runPlainReplica(argv: readonly string[], argvEnv: NodeJS.ProcessEnv): Promise<number> {
  const address = replicaListenAddress(argv, argvEnv);
  // `--schema <views>` as `ponder serve` takes it; DATABASE_SCHEMA otherwise.
  const schemaAt = argv.indexOf("--schema");
  const env = schemaAt === -1 ? argvEnv : { ...argvEnv, DATABASE_SCHEMA: argv[schemaAt + 1] };
  let replica: PlainReplica;
  try {
    replica = await startPlainReplica({ env, ...address });
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  logJson({
    level: "info",
    msg: "Plain replica serving",
    port: replica.port,
    hostname: address.hostname,
    schema: env.DATABASE_SCHEMA ?? "public",
  });
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  logJson({ level: "info", msg: "Draining: no new connection, answering the requests under way", signal });
  await replica.drain();
  logJson({ level: "info", msg: "Drained" });
  return 0;
}
