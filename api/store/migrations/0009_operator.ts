import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Operating the service (docs/deploy.md, docs/console.md): what the indexer watches. (Partner members: migration 0010.) */
export async function up(db: Kysely<unknown>): Promise<void> {
  // The configuration the indexer last started with, per index schema: the payment
  // addresses it watches (an address added since shows `watching: false`) and a
  // hash of everything that decides what it indexes (a change means a re-index).
  await db.schema
    .createTable("indexer_start")
    .addColumn("index_schema", "text", (col) => col.primaryKey())
    .addColumn("config_hash", "text", (col) => col.notNull())
    .addColumn("watched_json", "text", (col) => col.notNull())
    .addColumn("started_at", "bigint", (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("indexer_start").execute();
}
