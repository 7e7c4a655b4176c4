import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Refunds (SPEC 15, docs/refunds.md): refunds, the per-payment guard of their sum, and outgoing transfers. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("refund")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("order_id", "text", (col) => col.references("orders.id"))
    .addColumn("payment_chain_id", "integer", (col) => col.notNull())
    .addColumn("payment_transaction_hash", "text", (col) => col.notNull())
    .addColumn("payment_log_index", "integer", (col) => col.notNull())
    .addColumn("subject", "text", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("from_address", "text", (col) => col.notNull())
    .addColumn("payer_address", "text", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("reason", "text", (col) => col.notNull())
    .addColumn("note", "text")
    .addColumn("destination", "text")
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("token_hash", "text", (col) => col.unique())
    .addColumn("ready_at", "bigint")
    .addColumn("transfer_transaction_hash", "text")
    .addColumn("transfer_log_index", "integer")
    .addColumn("transfer_block_number", "bigint")
    .addColumn("transfer_block_hash", "text")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addColumn("succeeded_at", "bigint")
    .addColumn("cancelled_at", "bigint")
    // One transfer completes at most one refund (NULLs, refunds without a transfer, never collide).
    .addUniqueConstraint("refund_transfer", ["payment_chain_id", "transfer_transaction_hash", "transfer_log_index"])
    .execute();
  await db.schema.createIndex("refund_partner_created").on("refund").columns(["partner_id", "created_at", "id"]).execute();
  await db.schema.createIndex("refund_order").on("refund").column("order_id").execute();
  await db.schema
    .createIndex("refund_payment")
    .on("refund")
    .columns(["payment_chain_id", "payment_transaction_hash", "payment_log_index"])
    .execute();
  await db.schema.createIndex("refund_status").on("refund").columns(["status", "payment_chain_id"]).execute();

  await db.schema
    .createTable("refund_allowance")
    .addColumn("payment_key", "text", (col) => col.primaryKey())
    .addColumn("committed", "text", (col) => col.notNull())
    .addColumn("fully_refunded_at", "bigint")
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();

  await db.schema
    .createTable("outgoing_transfer")
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("transaction_hash", "text", (col) => col.notNull())
    .addColumn("log_index", "integer", (col) => col.notNull())
    .addColumn("partner_id", "text")
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("from_address", "text", (col) => col.notNull())
    .addColumn("to_address", "text", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("block_number", "bigint", (col) => col.notNull())
    .addColumn("block_hash", "text", (col) => col.notNull())
    .addColumn("block_timestamp", "bigint", (col) => col.notNull())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("refund_id", "text")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("outgoing_transfer_pk", ["chain_id", "transaction_hash", "log_index"])
    .execute();
  await db.schema
    .createIndex("outgoing_transfer_partner")
    .on("outgoing_transfer")
    .columns(["partner_id", "created_at"])
    .execute();
  await db.schema.createIndex("outgoing_transfer_block").on("outgoing_transfer").columns(["chain_id", "block_number"]).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("outgoing_transfer").execute();
  await db.schema.dropTable("refund_allowance").execute();
  await db.schema.dropTable("refund").execute();
}
