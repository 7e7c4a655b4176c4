import { type Kysely, sql } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Rewards (docs/rewards.md): partner settings, the rewards themselves, and claims seen on chain that match none. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("reward_settings")
    .addColumn("partner_id", "text", (col) => col.primaryKey().references("partner.id"))
    .addColumn("funding_address", "text")
    .addColumn("cashback_bps", "integer", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();

  await db.schema
    .createTable("reward")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("onchain_id", "text", (col) => col.notNull().unique())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("order_id", "text", (col) => col.notNull().references("orders.id"))
    .addColumn("external_order_id", "text", (col) => col.notNull())
    .addColumn("source", "text", (col) => col.notNull())
    .addColumn("idempotency_key", "text")
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("distributor_address", "text", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("funder", "text")
    .addColumn("recipient", "text")
    .addColumn("voucher_deadline", "bigint")
    .addColumn("transaction_hash", "text")
    .addColumn("block_number", "bigint")
    .addColumn("claimed_at", "bigint")
    .addColumn("revoked_reason", "text")
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("reward_order").on("reward").columns(["order_id", "created_at"]).execute();
  await db.schema.createIndex("reward_partner").on("reward").columns(["partner_id", "created_at", "id"]).execute();
  await db.schema.createIndex("reward_status").on("reward").columns(["status", "funder"]).execute();
  // One automatic cashback per order, whatever retries the settlement has.
  await db.schema
    .createIndex("reward_one_cashback")
    .on("reward")
    .columns(["order_id", "source"])
    .unique()
    .where(sql.ref("source"), "=", "cashback")
    .execute();

  await db.schema
    .createTable("reward_unknown_claim")
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("transaction_hash", "text", (col) => col.notNull())
    .addColumn("log_index", "integer", (col) => col.notNull())
    .addColumn("contract_address", "text", (col) => col.notNull())
    .addColumn("onchain_id", "text", (col) => col.notNull())
    .addColumn("funder", "text", (col) => col.notNull())
    .addColumn("recipient", "text", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("block_number", "bigint", (col) => col.notNull())
    .addColumn("reason", "text", (col) => col.notNull())
    .addColumn("reward_id", "text")
    .addColumn("seen_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("reward_unknown_claim_pk", ["chain_id", "transaction_hash", "log_index"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("reward_unknown_claim").execute();
  await db.schema.dropTable("reward").execute();
  await db.schema.dropTable("reward_settings").execute();
}
