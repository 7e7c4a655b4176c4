import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("webhook_endpoint")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("url", "text", (col) => col.notNull())
    .addColumn("events_json", "text", (col) => col.notNull())
    .addColumn("secret_ciphertext", "text", (col) => col.notNull())
    .addColumn("previous_secret_ciphertext", "text")
    .addColumn("previous_secret_expires_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addColumn("deleted_at", "bigint")
    .execute();
  await db.schema.createIndex("webhook_endpoint_partner").on("webhook_endpoint").columns(["partner_id", "created_at"]).execute();

  await db.schema
    .createTable("webhook_delivery")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("event_id", "text", (col) => col.notNull().references("event.id"))
    .addColumn("event_seq", "bigint", (col) => col.notNull())
    .addColumn("ordering_key", "text", (col) => col.notNull())
    .addColumn("partner_id", "text", (col) => col.notNull())
    .addColumn("endpoint_id", "text", (col) => col.notNull().references("webhook_endpoint.id"))
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("attempt_count", "integer", (col) => col.notNull())
    .addColumn("queued_at", "bigint", (col) => col.notNull())
    .addColumn("next_attempt_at", "bigint", (col) => col.notNull())
    .addColumn("locked_until", "bigint")
    .addColumn("lock_token", "text")
    .addColumn("last_attempt_at", "bigint")
    .addColumn("last_status_code", "integer")
    .addColumn("last_error", "text")
    .addColumn("delivered_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .addUniqueConstraint("webhook_delivery_event_endpoint", ["event_id", "endpoint_id"])
    .execute();
  // The dispatcher's two questions: which deliveries are due, and does an earlier
  // one of the same ordering key to the same endpoint still wait.
  await db.schema.createIndex("webhook_delivery_due").on("webhook_delivery").columns(["status", "next_attempt_at"]).execute();
  await db.schema
    .createIndex("webhook_delivery_ordering")
    .on("webhook_delivery")
    .columns(["endpoint_id", "ordering_key", "status", "event_seq"])
    .execute();
  await db.schema.createIndex("webhook_delivery_partner").on("webhook_delivery").columns(["partner_id", "created_at"]).execute();

  await db.schema
    .createTable("webhook_delivery_attempt")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("delivery_id", "text", (col) => col.notNull().references("webhook_delivery.id"))
    .addColumn("started_at", "bigint", (col) => col.notNull())
    .addColumn("duration_ms", "integer", (col) => col.notNull())
    .addColumn("status_code", "integer")
    .addColumn("error", "text")
    .addColumn("response_excerpt", "text")
    .execute();
  await db.schema
    .createIndex("webhook_delivery_attempt_delivery")
    .on("webhook_delivery_attempt")
    .columns(["delivery_id", "started_at"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ["webhook_delivery_attempt", "webhook_delivery", "webhook_endpoint"]) {
    await db.schema.dropTable(table).execute();
  }
}
