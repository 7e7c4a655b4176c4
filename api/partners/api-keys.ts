import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { ApiKeyScope, ApiKeyTable, Database, PartnerTable } from "../store/database.js";
import type { Store } from "../store/open-store.js";

export type Partner = { id: string; name: string };

/**
 * Who a bearer key is: a partner's key (`full`: every call; `read`: GETs only), or a
 * platform auditor's (GETs only, every partner; docs/accounting.md).
 */
export type KeyHolder =
  | { kind: "partner"; partner: Partner; scope: ApiKeyScope; keyId: string }
  | { kind: "auditor"; keyId: string };

/** An API key is 32 random bytes; only its SHA-256 is stored, so a leaked store leaks no key. */
export function hashApiKey(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

/**
 * The prefix a new key gets: `sk_live_` only where real money moves, that is when the
 * service settles on Base mainnet outside local mode; on test networks only (local,
 * Base Sepolia, a fork) keys are `sk_test_`, so a key never says live on a test network.
 */
export function apiKeyModeFor(params: { localMode: boolean; networks: readonly { name: string }[] }): "test" | "live" {
  return !params.localMode && params.networks.some((network) => network.name === "base") ? "live" : "test";
}

/** `sk_…` for a full key, `rk_…` for a read-only one (`scope: "read"`), `ak_…` for a platform auditor's. */
export function generateApiKey(mode: "test" | "live", scope: ApiKeyScope | "auditor" = "full"): string {
  const prefix = scope === "full" ? "sk" : scope === "read" ? "rk" : "ak";
  return `${prefix}_${mode}_${randomBytes(32).toString("base64url")}`;
}

export async function issueApiKey(
  store: Kysely<Database>,
  params: { partnerId: string; mode: "test" | "live"; apiKey?: string; scope?: ApiKeyScope; now?: number },
) {
  const scope = params.scope ?? "full";
  const apiKey = params.apiKey ?? generateApiKey(params.mode, scope);
  const id = `key_${randomUUID()}`;
  const createdAt = params.now ?? Date.now();
  await store
    .insertInto("api_key")
    .values({
      id,
      partner_id: params.partnerId,
      key_hash: hashApiKey(apiKey),
      key_prefix: apiKey.slice(0, 12),
      created_at: createdAt,
      revoked_at: null,
      scope,
    })
    .execute();
  return { id, apiKey, scope, createdAt };
}

/** A partner's key by id (another partner's is undefined). */
export async function findApiKeyOfPartner(db: Kysely<Database>, params: { partnerId: string; keyId: string }) {
  return db
    .selectFrom("api_key")
    .select(["id", "scope", "revoked_at"])
    .where("id", "=", params.keyId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
}

/** Revokes one of the partner's keys; answers whether this call revoked it. */
export async function markApiKeyRevoked(db: Kysely<Database>, params: { keyId: string; now: number }): Promise<boolean> {
  const result = await db
    .updateTable("api_key")
    .set({ revoked_at: params.now })
    .where("id", "=", params.keyId)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** A platform auditor key (shown once): reads every partner's books, writes nothing. */
export async function issueAuditorKey(store: Kysely<Database>, params: { mode: "test" | "live"; label?: string }) {
  const apiKey = generateApiKey(params.mode, "auditor");
  const id = `aud_${randomUUID()}`;
  const createdAt = Date.now();
  await store
    .insertInto("auditor_key")
    .values({
      id,
      key_hash: hashApiKey(apiKey),
      key_prefix: apiKey.slice(0, 12),
      label: params.label ?? null,
      created_at: createdAt,
      revoked_at: null,
    })
    .execute();
  return { id, apiKey, createdAt };
}

export async function revokeAuditorKey(store: Kysely<Database>, params: { keyId: string; now?: number }): Promise<boolean> {
  const result = await store
    .updateTable("auditor_key")
    .set({ revoked_at: params.now ?? Date.now() })
    .where("id", "=", params.keyId)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Who holds this bearer key, if it is live: a partner (with the key's scope) or a platform auditor. */
export async function findKeyHolder(store: Store, apiKey: string): Promise<KeyHolder | undefined> {
  const hash = hashApiKey(apiKey);
  const row = await store
    .selectFrom("api_key")
    .innerJoin("partner", "partner.id", "api_key.partner_id")
    .select(["partner.id as id", "partner.name as name", "api_key.scope as scope", "api_key.id as key_id"])
    .where("api_key.key_hash", "=", hash)
    .where("api_key.revoked_at", "is", null)
    .executeTakeFirst();
  if (row !== undefined) {
    return {
      kind: "partner",
      partner: { id: row.id, name: row.name },
      scope: row.scope === "read" ? "read" : "full",
      keyId: row.key_id,
    };
  }
  const auditor = await store
    .selectFrom("auditor_key")
    .select("id")
    .where("key_hash", "=", hash)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return auditor === undefined ? undefined : { kind: "auditor", keyId: auditor.id };
}

export async function findPartner(store: Kysely<Database>, partnerId: string): Promise<Partner | undefined> {
  return store.selectFrom("partner").select(["id", "name"]).where("id", "=", partnerId).executeTakeFirst();
}

export async function createPartner(store: Store, params: { name: string; id?: string }): Promise<Partner> {
  const partner = { id: params.id ?? `ptr_${randomUUID()}`, name: params.name };
  await store
    .insertInto("partner")
    .values({ ...partner, created_at: Date.now() })
    .execute();
  return partner;
}

/** A partner's whole row (the admin's detail), if it exists. */
export async function partnerRecord(db: Kysely<Database>, partnerId: string): Promise<PartnerTable | undefined> {
  return db.selectFrom("partner").selectAll().where("id", "=", partnerId).executeTakeFirst();
}

/** Partner ids in order, after `after` (the admin's pages of partners). */
export async function listPartnerIds(db: Kysely<Database>, params: { after?: string; limit: number }): Promise<string[]> {
  let query = db.selectFrom("partner").select("id").orderBy("id").limit(params.limit);
  if (params.after !== undefined) query = query.where("id", ">", params.after);
  return (await query.execute()).map((row) => row.id);
}

/** Every partner, oldest first, with how many live keys it holds (the operator's `partner list`). */
export async function partnersWithLiveKeyCounts(db: Kysely<Database>) {
  const rows = await db
    .selectFrom("partner")
    .leftJoin("api_key", (join) => join.onRef("api_key.partner_id", "=", "partner.id").on("api_key.revoked_at", "is", null))
    .select(["partner.id", "partner.name", "partner.created_at"])
    .select((eb) => eb.fn.count<string>("api_key.id").as("active_keys"))
    .groupBy(["partner.id", "partner.name", "partner.created_at"])
    .orderBy("partner.created_at")
    .orderBy("partner.id")
    .execute();
  return rows.map((row) => ({ id: row.id, name: row.name, activeApiKeys: Number(row.active_keys), createdAt: row.created_at }));
}

/** A partner's keys, oldest first, revoked ones too: all of them, or a page after `after`. */
export async function keysOfPartner(
  db: Kysely<Database>,
  params: { partnerId: string; after?: { t: number; id: string }; limit?: number },
): Promise<ApiKeyTable[]> {
  let query = db.selectFrom("api_key").selectAll().where("partner_id", "=", params.partnerId);
  const after = params.after;
  if (after !== undefined) {
    query = query.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), ">", tuple(after.t, after.id)));
  }
  query = query.orderBy("created_at").orderBy("id");
  if (params.limit !== undefined) query = query.limit(params.limit);
  return query.execute();
}

/** A key's id and partner, by id (the operator revokes a key by id alone). */
export async function findApiKey(db: Kysely<Database>, keyId: string) {
  return db.selectFrom("api_key").select(["id", "partner_id"]).where("id", "=", keyId).executeTakeFirst();
}

/** Whether this key (revoked or not) is on record, by its hash: a local stack issues its fixed key once. */
export async function apiKeyRecorded(db: Kysely<Database>, apiKey: string): Promise<boolean> {
  const row = await db.selectFrom("api_key").select("id").where("key_hash", "=", hashApiKey(apiKey)).executeTakeFirst();
  return row !== undefined;
}

/** A live auditor key's hash, by id (the service proves its identity with it); undefined when revoked or unknown. */
export async function liveAuditorKeyHash(db: Kysely<Database>, keyId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("auditor_key")
    .select("key_hash")
    .where("id", "=", keyId)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return row?.key_hash;
}
