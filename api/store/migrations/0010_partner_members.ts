import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** Console users of a partner (docs/console.md): wallets that sign in to the partner portal. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("partner_member")
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("address", "text", (col) => col.notNull())
    .addColumn("role", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("partner_member_pk", ["partner_id", "address"])
    .execute();
  await db.schema.createIndex("partner_member_address").on("partner_member").column("address").execute();
}
