import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Gasless payment (docs/gasless.md): relayed EIP-3009 authorizations and the relayer's lease. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("relayed_authorization")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("session_id", "text", (col) => col.notNull().references("checkout_session.id"))
    .addColumn("live_session_id", "text", (col) => col.unique())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("from_address", "text", (col) => col.notNull())
    .addColumn("to_address", "text", (col) => col.notNull())
    .addColumn("value", "text", (col) => col.notNull())
    .addColumn("valid_after", "text", (col) => col.notNull())
    .addColumn("valid_before", "text", (col) => col.notNull())
    .addColumn("nonce", "text", (col) => col.notNull())
    .addColumn("signature", "text", (col) => col.notNull())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("relayer_address", "text")
    .addColumn("relayer_nonce", "integer")
    .addColumn("transaction_hash", "text")
    .addColumn("transaction_hashes", "text", (col) => col.notNull())
    .addColumn("gas_limit", "text")
    .addColumn("max_fee_per_gas", "text")
    .addColumn("max_priority_fee_per_gas", "text")
    .addColumn("replacements", "integer", (col) => col.notNull())
    .addColumn("submitted_at", "bigint")
    .addColumn("gas_used", "text")
    .addColumn("effective_gas_price", "text")
    .addColumn("gas_cost_wei", "text")
    .addColumn("block_number", "bigint")
    .addColumn("failure_code", "text")
    .addColumn("failure_detail", "text")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addUniqueConstraint("relayed_authorization_nonce", ["chain_id", "token_address", "from_address", "nonce"])
    .execute();
  await db.schema.createIndex("relayed_authorization_session").on("relayed_authorization").column("session_id").execute();
  await db.schema
    .createIndex("relayed_authorization_status")
    .on("relayed_authorization")
    .columns(["status", "chain_id"])
    .execute();
  await db.schema.createIndex("relayed_authorization_tx").on("relayed_authorization").column("transaction_hash").execute();

  await db.schema
    .createTable("relayer_lease")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("holder", "text", (col) => col.notNull())
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("next_nonce", "integer", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("relayer_lease").execute();
  await db.schema.dropTable("relayed_authorization").execute();
}
