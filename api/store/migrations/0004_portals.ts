import { type Kysely, SqliteAdapter, sql } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/** An auto-incrementing integer key in either dialect (used for ordered cursors). */
function sequenceColumnType(db: Kysely<unknown>) {
  return db.getExecutor().adapter instanceof SqliteAdapter ? sql`integer primary key autoincrement` : sql`bigserial primary key`;
}

/** Tables of the investor, issuer and admin portals (docs/portals.md). */
export async function up(db: Kysely<unknown>): Promise<void> {
  // A sign-in challenge: the exact SIWE message we issued, single use.
  await db.schema
    .createTable("portal_challenge")
    .addColumn("nonce", "text", (col) => col.primaryKey())
    .addColumn("portal", "text", (col) => col.notNull())
    .addColumn("address", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("domain", "text", (col) => col.notNull())
    .addColumn("uri", "text", (col) => col.notNull())
    .addColumn("message", "text", (col) => col.notNull())
    .addColumn("issued_at", "bigint", (col) => col.notNull())
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("consumed_at", "bigint")
    .execute();
  await db.schema.createIndex("portal_challenge_expiry").on("portal_challenge").column("expires_at").execute();

  await db.schema
    .createTable("portal_session")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("token_hash", "text", (col) => col.notNull().unique())
    .addColumn("role", "text", (col) => col.notNull())
    .addColumn("address", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();

  await db.schema
    .createTable("issuer")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("address", "text", (col) => col.notNull().unique())
    .addColumn("name", "text", (col) => col.notNull())
    .addColumn("partner_id", "text", (col) => col.notNull().references("partner.id"))
    .addColumn("registered_by", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("disabled_at", "bigint")
    .execute();

  await db.schema
    .createTable("offering")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("issuer_id", "text", (col) => col.notNull().references("issuer.id"))
    .addColumn("status", "text", (col) => col.notNull())
    .addColumn("name", "text", (col) => col.notNull())
    .addColumn("description", "text", (col) => col.notNull())
    .addColumn("network", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("asset_token", "text")
    .addColumn("unit_price_usdc", "text", (col) => col.notNull())
    .addColumn("min_units", "integer", (col) => col.notNull())
    .addColumn("max_units_per_investor", "integer", (col) => col.notNull())
    .addColumn("total_units", "integer", (col) => col.notNull())
    .addColumn("units_available", "integer", (col) => col.notNull())
    .addColumn("opens_at", "bigint", (col) => col.notNull())
    .addColumn("closes_at", "bigint", (col) => col.notNull())
    .addColumn("settlement_address", "text", (col) => col.notNull())
    .addColumn("certificate_enabled", "integer", (col) => col.notNull())
    .addColumn("require_kyc", "integer", (col) => col.notNull())
    .addColumn("require_accreditation", "integer", (col) => col.notNull())
    .addColumn("allowed_jurisdictions", "text")
    .addColumn("blocked_jurisdictions", "text")
    .addColumn("review_reason", "text")
    .addColumn("paused_by", "text")
    .addColumn("close_reason", "text")
    .addColumn("submitted_at", "bigint")
    .addColumn("approved_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("offering_issuer").on("offering").column("issuer_id").execute();
  await db.schema.createIndex("offering_status").on("offering").columns(["status", "created_at"]).execute();

  await db.schema
    .createTable("investor_eligibility")
    .addColumn("address", "text", (col) => col.primaryKey())
    .addColumn("kyc_status", "text", (col) => col.notNull())
    .addColumn("jurisdiction", "text")
    .addColumn("accredited", "integer", (col) => col.notNull())
    .addColumn("accreditation_expires_at", "bigint")
    .addColumn("frozen_at", "bigint")
    .addColumn("frozen_reason", "text")
    .addColumn("updated_by", "text", (col) => col.notNull())
    .addColumn("updated_at", "bigint", (col) => col.notNull())
    .execute();

  // Units one investor holds in one offering (reserved or paid): the per-investor cap
  // is a guarded UPDATE on this row, so concurrent checkouts cannot exceed it.
  await db.schema
    .createTable("offering_position")
    .addColumn("offering_id", "text", (col) => col.notNull().references("offering.id"))
    .addColumn("investor", "text", (col) => col.notNull())
    .addColumn("units", "integer", (col) => col.notNull())
    .addPrimaryKeyConstraint("offering_position_pk", ["offering_id", "investor"])
    .execute();

  await db.schema
    .createTable("rwa_purchase")
    .addColumn("id", "text", (col) => col.primaryKey())
    .addColumn("offering_id", "text", (col) => col.notNull().references("offering.id"))
    .addColumn("investor", "text", (col) => col.notNull())
    .addColumn("recipient", "text", (col) => col.notNull())
    .addColumn("units", "integer", (col) => col.notNull())
    .addColumn("unit_price_usdc", "text", (col) => col.notNull())
    .addColumn("total_price_usdc", "text", (col) => col.notNull())
    .addColumn("network", "text", (col) => col.notNull())
    .addColumn("chain_id", "integer", (col) => col.notNull())
    .addColumn("session_id", "text", (col) => col.unique())
    .addColumn("expires_at", "bigint", (col) => col.notNull())
    .addColumn("released_at", "bigint")
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .execute();
  await db.schema.createIndex("rwa_purchase_investor").on("rwa_purchase").columns(["investor", "created_at"]).execute();
  await db.schema.createIndex("rwa_purchase_offering").on("rwa_purchase").columns(["offering_id", "created_at"]).execute();

  // Append-only: the service never updates or deletes a row of this table.
  await db.schema
    .createTable("audit_log")
    .addColumn("seq", sequenceColumnType(db))
    .addColumn("id", "text", (col) => col.notNull().unique())
    .addColumn("actor_role", "text", (col) => col.notNull())
    .addColumn("actor_address", "text", (col) => col.notNull())
    .addColumn("action", "text", (col) => col.notNull())
    .addColumn("target_type", "text", (col) => col.notNull())
    .addColumn("target_id", "text", (col) => col.notNull())
    .addColumn("details", "text", (col) => col.notNull())
    .addColumn("created_at", "bigint", (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    "audit_log",
    "rwa_purchase",
    "offering_position",
    "investor_eligibility",
    "offering",
    "issuer",
    "portal_session",
    "portal_challenge",
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
