import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * Closed periods (docs/accounting.md, "Closed periods"): a partner's closed range with
 * the ledger CSV served at closing (its bytes and their SHA-256), the reconciliation's
 * figures and the entries it held; a guard row per partner and chain that serialises
 * closings (so two overlapping ones cannot both pass the overlap check); and the later
 * facts found touching a closed range, reported as adjustments.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("closed_period")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("from_block", "bigint", (col) => col.notNull())
    .addColumn("to_block", "bigint", (col) => col.notNull())
    .addColumn("from_time", "bigint", (col) => col.notNull())
    .addColumn("to_time", "bigint", (col) => col.notNull())
    .addColumn("closed_at", "bigint", (col) => col.notNull())
    .addColumn("digest", "text", (col) => col.notNull())
    .addColumn("ledger_csv", "text", (col) => col.notNull())
    .addColumn("reconciliation_json", "text", (col) => col.notNull())
    .addColumn("entries_json", "text", (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex("closed_period_partner_blocks")
    .on("closed_period")
    .columns(["partner_id", "chain_id", "from_block"])
    .execute();

  await db.schema
    .createTable("closed_period_guard")
    .addColumn("partner_id", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("closings", "integer", (col) => col.notNull())
    .addPrimaryKeyConstraint("closed_period_guard_pk", ["partner_id", "chain_id"])
    .execute();

  await db.schema
    .createTable("period_adjustment")
    .addColumn("period_id", "text", (col) => col.notNull())
    .addColumn("change", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("transaction_hash", "text", (col) => col.notNull())
    .addColumn("log_index", "integer", (col) => col.notNull())
    .addColumn("payment_address", "text", (col) => col.notNull())
    .addColumn("entry_kind", "text", (col) => col.notNull())
    .addColumn("value", "text", (col) => col.notNull())
    .addColumn("balance_effect", "text", (col) => col.notNull())
    .addColumn("detected_at", "bigint", (col) => col.notNull())
    .addColumn("detected_block", "bigint", (col) => col.notNull())
    .addPrimaryKeyConstraint("period_adjustment_pk", ["period_id", "transaction_hash", "log_index", "payment_address", "change"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("period_adjustment").execute();
  await db.schema.dropTable("closed_period_guard").execute();
  await db.schema.dropTable("closed_period").execute();
}
