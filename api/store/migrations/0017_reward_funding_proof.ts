import { type Kysely, sql } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * Issue 40 (docs/rewards.md, "Setting up"):
 *
 * - a funding address is proven by a signature of it over a challenge the service
 *   issued to one partner (`reward_funding_challenge`, single-use nonces); the
 *   settings keep when and with which message and signature it was proven. Rows set
 *   before this migration have no proof and pay nothing until their address is proven;
 * - one proven funding address belongs to one partner: a unique index over the proven
 *   rows, so two concurrent proofs of one address cannot both win;
 * - a reward whose voucher was out when its order was fully refunded carries the
 *   revocation it is owed (`revocation_due`), applied once that voucher lapses.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("reward_settings").addColumn("funding_proven_at", "bigint").execute();
  await db.schema.alterTable("reward_settings").addColumn("funding_proof_message", "text").execute();
  await db.schema.alterTable("reward_settings").addColumn("funding_proof_signature", "text").execute();
  await db.schema
    .createIndex("reward_settings_one_funder")
    .on("reward_settings")
    .column("funding_address")
    .unique()
    .where(sql.ref("funding_proven_at"), "is not", null)
    .execute();

  await db.schema
    .createTable("reward_funding_challenge")
    .addColumn("nonce", "text", (col) => col.primaryKey())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("funding_address", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("message", "text", (col) => col.notNull())
    .addColumn("issued_at", "bigint", (col) => col.notNull())
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("consumed_at", "bigint")
    .execute();

  await db.schema.alterTable("reward").addColumn("revocation_due", "text").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("reward").dropColumn("revocation_due").execute();
  await db.schema.dropTable("reward_funding_challenge").execute();
  await db.schema.dropIndex("reward_settings_one_funder").execute();
  await db.schema.alterTable("reward_settings").dropColumn("funding_proof_signature").execute();
  await db.schema.alterTable("reward_settings").dropColumn("funding_proof_message").execute();
  await db.schema.alterTable("reward_settings").dropColumn("funding_proven_at").execute();
}
