import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * The reconciliation reads only the payments with a ledger kind of their own
 * (api/accounting/reconciliation.ts): an index on the payments of an address by
 * block, so that read does not walk every payment ever recorded.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex("payment_recipient_block")
    .on("payment")
    .columns(["chain_id", "to_address", "block_number"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("payment_recipient_block").execute();
}
