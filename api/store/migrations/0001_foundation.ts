import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("partner")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("name", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .execute();

  await db.schema
    .createTable("api_key")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("key_hash", "text", (col) => col.notNull().unique())
    .addColumn("key_prefix", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();

  await db.schema
    .createTable("payment_address")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("network", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("address", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addUniqueConstraint("payment_address_network_address", ["chain_id", "address"])
    .execute();
  await db.schema.createIndex("payment_address_partner").on("payment_address").column("partner_id").execute();

  await db.schema
    .createTable("worker_heartbeat")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("worker", "text", (col) => col.notNull())
    .addColumn("beat_at", "bigint", (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ["worker_heartbeat", "payment_address", "api_key", "partner"]) {
    await db.schema.dropTable(table).execute();
  }
}
