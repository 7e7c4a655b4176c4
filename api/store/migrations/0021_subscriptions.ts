import { type Kysely, sql } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Subscriptions (SPEC 18, docs/subscriptions.md): what a partner sells every period, and one charge per period. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("subscription")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("external_customer_id", "text", (col) => col.notNull())
    .addColumn("product_name", "text", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("interval", "text", (col) => col.notNull())
    .addColumn("period_seconds", "bigint", (col) => col.notNull())
    .addColumn("start_at", "bigint")
    .addColumn("end_at", "bigint")
    .addColumn("metadata", "text")
    .addColumn("success_url", "text")
    .addColumn("cancel_url", "text")
    .addColumn("idempotency_key", "text")
    .addColumn("client_token_hash", "text", (col) => col.notNull())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("manager_address", "text", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("payee", "text", (col) => col.notNull())
    .addColumn("subscriber", "text")
    .addColumn("onchain_id", "text", (col) => col.unique())
    .addColumn("terms_start", "bigint")
    .addColumn("terms_end", "bigint")
    .addColumn("permit_value", "text")
    .addColumn("authorization_transaction_hash", "text")
    .addColumn("activated_at", "bigint")
    .addColumn("cancel_at_period_end", "integer", (col) => col.notNull())
    .addColumn("cancelled_by", "text")
    .addColumn("cancelled_at", "bigint")
    .addColumn("ended_at", "bigint")
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("subscription_partner").on("subscription").columns(["partner_id", "created_at", "id"]).execute();
  await db.schema.createIndex("subscription_status").on("subscription").columns(["status", "expires_at"]).execute();
  // A replayed creation answers the subscription it made; a partner's keys never collide with another's.
  await db.schema
    .createIndex("subscription_idempotency")
    .on("subscription")
    .columns(["partner_id", "idempotency_key"])
    .unique()
    .where(sql.ref("idempotency_key"), "is not", null)
    .execute();

  await db.schema
    .createTable("subscription_charge")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("subscription_id", "text", (col) => col.notNull().references("subscription.id"))
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("period_index", "bigint", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("due_at", "bigint", (col) => col.notNull())
    .addColumn("attempts", "integer", (col) => col.notNull())
    .addColumn("failure_reason", "text")
    .addColumn("next_retry_at", "bigint")
    .addColumn("order_id", "text", (col) => col.references("orders.id"))
    .addColumn("transaction_hash", "text")
    .addColumn("log_index", "integer")
    .addColumn("block_number", "bigint")
    .addColumn("paid_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  // One charge per period of a subscription, however many workers try to create it.
  await db.schema
    .createIndex("subscription_charge_period")
    .on("subscription_charge")
    .columns(["subscription_id", "period_index"])
    .unique()
    .execute();
  await db.schema
    .createIndex("subscription_charge_status")
    .on("subscription_charge")
    .columns(["status", "next_retry_at"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("subscription_charge").execute();
  await db.schema.dropTable("subscription").execute();
}
