import { type Kysely, SqliteAdapter, sql } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** An auto-incrementing integer key in either dialect (used for ordered cursors). */
function sequenceColumnType(db: Kysely<unknown>) {
  return db.getExecutor().adapter instanceof SqliteAdapter ? sql`integer primary key autoincrement` : sql`bigserial primary key`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("orders")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("external_order_id", "text", (col) => col.notNull())
    .addColumn("purchase_id", "text", (col) => col.notNull().unique())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("settled_session_id", "text")
    .addColumn("fulfilment_reference", "text")
    .addColumn("fulfilment_idempotency_key", "text")
    .addColumn("fulfilled_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addUniqueConstraint("orders_partner_external", ["partner_id", "external_order_id"])
    .execute();

  await db.schema
    .createTable("checkout_session")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("order_id", "text", (col) => col.notNull().references("orders.id"))
    .addColumn("kind", "text", (col) => col.notNull())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("network", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("token_address", "text", (col) => col.notNull())
    .addColumn("payment_address", "text", (col) => col.notNull())
    .addColumn("total_price_usdc", "text", (col) => col.notNull())
    .addColumn("amount_offset", "integer", (col) => col.notNull())
    .addColumn("amount_due", "text", (col) => col.notNull())
    .addColumn("required_payer", "text")
    .addColumn("external_order_id", "text", (col) => col.notNull())
    .addColumn("external_product_id", "text", (col) => col.notNull())
    .addColumn("product_name", "text", (col) => col.notNull())
    .addColumn("product_category", "text", (col) => col.notNull())
    .addColumn("quantity", "integer", (col) => col.notNull())
    .addColumn("shipping_required", "integer", (col) => col.notNull())
    .addColumn("certificate_enabled", "integer", (col) => col.notNull())
    .addColumn("contact_json", "text")
    .addColumn("delivery_json", "text")
    .addColumn("metadata_json", "text")
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("late_until", "bigint", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("checkout_session_order").on("checkout_session").column("order_id").execute();
  await db.schema
    .createIndex("checkout_session_status_expiry")
    .on("checkout_session")
    .columns(["status", "expires_at"])
    .execute();

  // The payment reference: one open claim on (chain, address, exact amount) at a time.
  await db.schema
    .createTable("amount_reservation")
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("payment_address", "text", (col) => col.notNull())
    .addColumn("amount_due", "text", (col) => col.notNull())
    .addColumn("total_price_usdc", "text", (col) => col.notNull())
    .addColumn("session_id", "text", (col) => col.notNull())
    .addColumn("released_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("amount_reservation_pk", ["chain_id", "payment_address", "amount_due"])
    .execute();
  await db.schema
    .createIndex("amount_reservation_total")
    .on("amount_reservation")
    .columns(["chain_id", "payment_address", "total_price_usdc"])
    .execute();

  await db.schema
    .createTable("client_token")
    .addColumn("token_hash", "text", (col) => col.primaryKey())
    .addColumn("session_id", "text", (col) => col.notNull().references("checkout_session.id"))
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .execute();

  // Every indexed transfer the engine has looked at, matched or not. The primary
  // key is the replay guard: one transfer is credited at most once.
  await db.schema
    .createTable("payment")
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("transaction_hash", "text", (col) => col.notNull())
    .addColumn("log_index", "integer", (col) => col.notNull())
    .addColumn("partner_id", "text")
    .addColumn("session_id", "text")
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("reason", "text")
    .addColumn("from_address", "text", (col) => col.notNull())
    .addColumn("to_address", "text", (col) => col.notNull())
    .addColumn("amount", "text", (col) => col.notNull())
    .addColumn("block_number", "bigint", (col) => col.notNull())
    .addColumn("block_hash", "text", (col) => col.notNull())
    .addColumn("block_timestamp", "bigint", (col) => col.notNull())
    .addColumn("resolution", "text")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("payment_pk", ["chain_id", "transaction_hash", "log_index"])
    .execute();
  await db.schema.createIndex("payment_session").on("payment").column("session_id").execute();
  await db.schema.createIndex("payment_status").on("payment").columns(["status", "partner_id"]).execute();

  await db.schema
    .createTable("certificate")
    .addColumn("order_id", "text", (col) => col.primaryKey().references("orders.id"))
    .addColumn("purchase_id", "text", (col) => col.notNull().unique())
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("contract_address", "text", (col) => col.notNull())
    .addColumn("buyer", "text")
    .addColumn("token_id", "text", (col) => col.notNull())
    .addColumn("voucher_deadline", "bigint")
    .addColumn("mint_transaction_hash", "text")
    .addColumn("mint_block_number", "bigint")
    .addColumn("minted_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("certificate_status").on("certificate").column("status").execute();

  // The outbox: written in the same transaction as the state change it reports.
  await db.schema
    .createTable("event")
    .addColumn("seq", sequenceColumnType(db))
    .addColumn("id", "text", (col) => col.notNull().unique())
    .addColumn("partner_id", "text", (col) => col.notNull())
    .addColumn("type", "text", (col) => col.notNull())
    .addColumn("ordering_key", "text", (col) => col.notNull())
    .addColumn("payload", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("event_partner_seq").on("event").columns(["partner_id", "seq"]).execute();

  await db.schema
    .createTable("idempotency_record")
    .addColumn("partner_id", "text", (col) => col.notNull())
    .addColumn("scope", "text", (col) => col.notNull())
    .addColumn("idempotency_key", "text", (col) => col.notNull())
    .addColumn("request_hash", "text", (col) => col.notNull())
    .addColumn("resource_id", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("idempotency_record_pk", ["partner_id", "scope", "idempotency_key"])
    .execute();

  await db.schema
    .createTable("worker_cursor")
    .addColumn("name", "text", (col) => col.primaryKey())
    .addColumn("value", "text", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    "worker_cursor",
    "idempotency_record",
    "event",
    "certificate",
    "payment",
    "client_token",
    "amount_reservation",
    "checkout_session",
    "orders",
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
