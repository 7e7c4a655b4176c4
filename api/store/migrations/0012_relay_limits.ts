import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * The second attack review (issue 24): what every relayed transaction cost, per
 * partner and day (the relayer's quotas and gas budget, docs/gasless.md), and the
 * origins a partner declares may frame its hosted checkout (docs/hosted-checkout.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("relayer_charge")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("purpose", "text", (col) => col.notNull())
    .addColumn("subject_id", "text")
    .addColumn("day", "text", (col) => col.notNull())
    .addColumn("transaction_hash", "text", (col) => col.notNull())
    .addColumn("reserved_wei", "text", (col) => col.notNull())
    .addColumn("gas_cost_wei", "text")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex("relayer_charge_partner_day")
    .on("relayer_charge")
    .columns(["partner_id", "chain_id", "day"])
    .execute();
  await db.schema.createIndex("relayer_charge_subject").on("relayer_charge").column("subject_id").execute();
  await db.schema.createIndex("relayer_charge_tx").on("relayer_charge").column("transaction_hash").execute();
  await db.schema.alterTable("partner_branding").addColumn("frame_origins", "text").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("partner_branding").dropColumn("frame_origins").execute();
  await db.schema.dropTable("relayer_charge").execute();
}
