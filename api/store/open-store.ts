import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, type Migration, type MigrationProvider, Migrator, SqliteDialect } from "kysely";
import type { Database } from "./database.js";
import * as m0001 from "./migrations/0001_foundation.js";
import * as m0002 from "./migrations/0002_commerce.js";
import * as m0003 from "./migrations/0003_webhooks.js";
import * as m0004 from "./migrations/0004_portals.js";

export type Store = Kysely<Database>;

const migrations: Record<string, Migration> = {
  "0001_foundation": m0001,
  "0002_commerce": m0002,
  "0003_webhooks": m0003,
  "0004_portals": m0004,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Opens the app store: an embedded SQLite file by default. WAL and a busy timeout
 * let the API process, workers and scripts share one file safely.
 */
export function openSqliteStore(file: string): Store {
  mkdirSync(dirname(file), { recursive: true });
  const database = new SQLite(file);
  database.pragma("journal_mode = WAL");
  database.pragma("busy_timeout = 5000");
  database.pragma("foreign_keys = ON");
  database.pragma("synchronous = NORMAL");
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
}

export async function migrateStore(store: Store): Promise<void> {
  const migrator = new Migrator({ db: store, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === "Error");
  if (error !== undefined || failed !== undefined) {
    throw new Error(`store migration ${failed?.migrationName ?? ""} failed: ${String(error)}`);
  }
}
