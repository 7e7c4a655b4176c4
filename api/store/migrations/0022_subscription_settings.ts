import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * A partner's subscription settings (docs/subscriptions.md, "Retries"): the delays, in
 * seconds of chain time, after which a failed charge is tried again. No row: the default
 * schedule (1 h, 6 h, 24 h, 72 h).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("subscription_settings")
    .addColumn("partner_id", "text", (col) => col.primaryKey())
    .addColumn("retry_delays_json", "text", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
}
