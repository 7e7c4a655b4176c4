import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import SQLite from "better-sqlite3";
import { Kysely, type Migration, type MigrationProvider, Migrator, PostgresDialect, type SqliteDatabase } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import pg from "pg";
import { logJson } from "../logging/redact.js";
import type { Database } from "./database.js";
import * as m0001 from "./migrations/0001_foundation.js";
import * as m0002 from "./migrations/0002_commerce.js";
import * as m0003 from "./migrations/0003_webhooks.js";
import * as m0004 from "./migrations/0004_portals.js";
import * as m0006 from "./migrations/0006_tenant_limits.js";
import * as m0008 from "./migrations/0008_hosted_checkout.js";
import * as m0009 from "./migrations/0009_operator.js";
import * as m0010 from "./migrations/0010_partner_members.js";
import * as m0011 from "./migrations/0011_gasless_relay.js";
import * as m0012 from "./migrations/0012_relay_limits.js";
import * as m0013 from "./migrations/0013_refunds.js";
import * as m0014 from "./migrations/0014_accounting.js";
import * as m0015 from "./migrations/0015_rewards.js";
import * as m0016 from "./migrations/0016_books_reads.js";
import * as m0017 from "./migrations/0017_reward_funding_proof.js";
import * as m0018 from "./migrations/0018_refund_ready_block.js";
import * as m0019 from "./migrations/0019_zero_value_movements.js";
import * as m0020 from "./migrations/0020_closed_periods.js";
import * as m0021 from "./migrations/0021_subscriptions.js";
import * as m0022 from "./migrations/0022_subscription_settings.js";
import * as m0023 from "./migrations/0023_adjustment_evidence.js";
import { BoundedSqliteDialect, POSTGRES_TIMEOUTS, SQLITE_BUSY_SLICE_MS } from "./store-availability.js";

export type Store = Kysely<Database>;

const migrations: Record<string, Migration> = {
  "0001_foundation": m0001,
  "0002_commerce": m0002,
  "0003_webhooks": m0003,
  "0004_portals": m0004,
  "0006_tenant_limits": m0006,
  "0008_hosted_checkout": m0008,
  "0009_operator": m0009,
  "0010_partner_members": m0010,
  "0011_gasless_relay": m0011,
  "0012_relay_limits": m0012,
  "0013_refunds": m0013,
  "0014_accounting": m0014,
  "0015_rewards": m0015,
  "0016_books_reads": m0016,
  "0017_reward_funding_proof": m0017,
  "0018_refund_ready_block": m0018,
  "0019_zero_value_movements": m0019,
  "0020_closed_periods": m0020,
  "0021_subscriptions": m0021,
  "0022_subscription_settings": m0022,
  "0023_adjustment_evidence": m0023,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Opens the app store: an embedded SQLite file by default. WAL and a busy timeout
 * let the API process, workers and scripts share one file safely. The busy timeout
 * is a short synchronous slice: better-sqlite3 blocks the whole process while it
 * waits, so the rest of a wait for another process' lock is asynchronous and
 * bounded (store-availability.ts), ending in `503 store_unavailable`.
 */
export function openSqliteStore(file: string): Store {
  mkdirSync(dirname(file), { recursive: true });
  const database = new SQLite(file);
  database.pragma("journal_mode = WAL");
  database.pragma(`busy_timeout = ${SQLITE_BUSY_SLICE_MS}`);
  database.pragma("foreign_keys = ON");
  database.pragma("synchronous = NORMAL");
  return new Kysely<Database>({ dialect: new BoundedSqliteDialect({ database: withStatementCache(database) }) });
}

/** Compiled statements kept per SQL text; Kysely's dialect would otherwise prepare every query anew. */
const STATEMENT_CACHE_SIZE = 1000;

function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(sql) {
      const cached = statements.get(sql);
      // A statement still being iterated (a streamed query) cannot run again: prepare a fresh one.
      if (cached !== undefined && !cached.busy) return cached;
      const statement = database.prepare(sql);
      if (cached === undefined) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

/** Postgres `int8` columns (our instants) come back as numbers, as SQLite gives them. */
const INT8_OID = 20;

/** Connections per process to a Postgres store unless `STORE_POOL_SIZE` says otherwise. */
const DEFAULT_POOL_SIZE = 10;

/** Postgres for scale-out: the same Kysely code, every process sharing one database. */
export function openPostgresStore(connectionString: string, poolSize = DEFAULT_POOL_SIZE): Store {
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    // Bounded waits: a store that does not answer becomes `503 store_unavailable`, not a hung request.
    connectionTimeoutMillis: POSTGRES_TIMEOUTS.connectionTimeoutMillis,
    statement_timeout: POSTGRES_TIMEOUTS.statement_timeout,
    lock_timeout: POSTGRES_TIMEOUTS.lock_timeout,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A connection the server ends (a restart, a failover, an idle kill) is reported as an
  // 'error' event; with no listener Node throws it as an uncaughtException, which ends the
  // whole process (Ponder exits with 75). The pool already drops such a client, and the next
  // query opens a new connection or fails as `503 store_unavailable`: say so and go on.
  const connectionLost = (error: Error) =>
    logJson({
      level: "warn",
      msg: "A store connection was closed by Postgres; the next query opens another",
      error: error.message,
    });
  pool.on("error", connectionLost);
  pool.on("connect", (client) => client.on("error", connectionLost));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** Embedded Postgres (PGlite) in one directory: Postgres semantics without a server, one process at a time. */
export function openPgliteStore(directory: string): Store {
  mkdirSync(directory, { recursive: true });
  const database = new PGlite(directory, { parsers: { [INT8_OID]: (value: string) => Number(value) } });
  return new Kysely<Database>({ dialect: new PGliteDialect(database) });
}

/**
 * The store named by `STORE_URL`: `postgres://…` (scale-out, a pool of `STORE_POOL_SIZE`),
 * `pglite:<dir>` (embedded Postgres), or by default the SQLite file `<dataDir>/app.sqlite`.
 * Pass the configuration itself, so that no process forgets one of its settings.
 */
export function openStore(params: { storeUrl?: string; dataDir: string; storePoolSize?: number }): Store {
  const url = params.storeUrl;
  if (url === undefined || url === "") return openSqliteStore(join(params.dataDir, "app.sqlite"));
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) return openPostgresStore(url, params.storePoolSize);
  if (url.startsWith("pglite:")) return openPgliteStore(url.slice("pglite:".length));
  throw new Error("STORE_URL must be postgres://…, postgresql://… or pglite:<directory>");
}

export async function migrateStore(store: Store): Promise<void> {
  const migrator = new Migrator({ db: store, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === "Error");
  if (error !== undefined || failed !== undefined) {
    throw new Error(`store migration ${failed?.migrationName ?? ""} failed: ${String(error)}`);
  }
}
