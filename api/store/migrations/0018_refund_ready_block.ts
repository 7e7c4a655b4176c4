import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * Refunds (docs/refunds.md), issue 40:
 * - `ready_block`: the indexed head when the refund became ready. A transfer completes
 *   it only from a later block: one clock, the chain's, where the wall clock of the
 *   service and the block time of the chain could disagree. Null for a refund that was
 *   ready before this migration (the time rule still applies to it).
 * - `test_send_claimed_at`: when "Send with the test account" claimed the refund's one
 *   send, so that concurrent requests, in any process, send it once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("refund").addColumn("ready_block", "bigint").execute();
  await db.schema.alterTable("refund").addColumn("test_send_claimed_at", "bigint").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("refund").dropColumn("test_send_claimed_at").execute();
  await db.schema.alterTable("refund").dropColumn("ready_block").execute();
}
