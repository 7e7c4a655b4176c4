import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Hosted checkout as a product (docs/hosted-checkout.md): partner branding and the hosted options of a session. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("partner_branding")
    .addColumn("partner_id", "text", (col) => col.primaryKey().references("partner.id"))
    .addColumn("display_name", "text")
    .addColumn("accent_color", "text")
    .addColumn("support_url", "text")
    .addColumn("support_email", "text")
    .addColumn("logo_content_type", "text")
    .addColumn("logo_base64", "text")
    .addColumn("logo_sha256", "text")
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();

  await db.schema
    .createTable("session_presentation")
    .addColumn("session_id", "text", (col) => col.primaryKey().references("checkout_session.id"))
    .addColumn("success_url", "text")
    .addColumn("cancel_url", "text")
    .addColumn("customer_json", "text")
    .addColumn("line_items_json", "text")
    .execute();
}
