import { type Kysely, sql } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * Accounting (docs/accounting.md): the scope of a partner's API key (`full` or
 * `read`), platform auditor keys, the balance of each payment address just before
 * the indexer's start block (read once from the chain), and the latest
 * reconciliation check of each address (health and the console show a mismatch).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("api_key")
    .addColumn("scope", "text", (col) => col.notNull().defaultTo(sql`'full'`))
    .execute();

  await db.schema
    .createTable("auditor_key")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("key_hash", "text", (col) => col.notNull().unique())
    .addColumn("key_prefix", "text", (col) => col.notNull())
    .addColumn("label", "text")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();

  await db.schema
    .createTable("opening_balance")
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("address", "text", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("block_number", "bigint", (col) => col.notNull())
    .addColumn("balance", "text", (col) => col.notNull())
    .addColumn("read_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("opening_balance_pk", ["chain_id", "address"])
    .execute();

  await db.schema
    .createTable("reconciliation_check")
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("address", "text", (col) => col.notNull())
    .addColumn("partner_id", "text")
    .addColumn("block_number", "bigint", (col) => col.notNull())
    .addColumn("computed_balance", "text", (col) => col.notNull())
    .addColumn("chain_balance", "text", (col) => col.notNull())
    .addColumn("difference", "text", (col) => col.notNull())
    .addColumn("reconciled", "integer", (col) => col.notNull())
    .addColumn("checked_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("reconciliation_check_pk", ["chain_id", "address"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("reconciliation_check").execute();
  await db.schema.dropTable("opening_balance").execute();
  await db.schema.dropTable("auditor_key").execute();
  await db.schema.alterTable("api_key").dropColumn("scope").execute();
}
