import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * An adjustment is a row of the next open period's ledger (SPEC 17.1, `kind:
 * "adjustment"`), and a ledger row carries its on-chain evidence: the transfer's block,
 * block hash and time, its two addresses and its leg. A `removed` transfer is gone from
 * the index, so the evidence is kept when the adjustment is found. Null on adjustments
 * found before this migration (their rows fall back to what was kept: docs/accounting.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("period_adjustment").addColumn("block_number", "bigint").execute();
  await db.schema.alterTable("period_adjustment").addColumn("block_hash", "text").execute();
  await db.schema.alterTable("period_adjustment").addColumn("block_time", "bigint").execute();
  await db.schema.alterTable("period_adjustment").addColumn("from_address", "text").execute();
  await db.schema.alterTable("period_adjustment").addColumn("to_address", "text").execute();
  await db.schema.alterTable("period_adjustment").addColumn("leg", "integer").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of ["leg", "to_address", "from_address", "block_time", "block_hash", "block_number"])
    await db.schema.alterTable("period_adjustment").dropColumn(column).execute();
}
