import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * Indexes for the tenant limits (docs/security.md): a session's payment reference
 * is released by session id when the session ends unused, and the mint confirmer
 * walks the issued vouchers in order id order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex("amount_reservation_session").on("amount_reservation").column("session_id").execute();
  await db.schema.createIndex("certificate_status_order").on("certificate").columns(["status", "order_id"]).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("certificate_status_order").execute();
  await db.schema.dropIndex("amount_reservation_session").execute();
}
