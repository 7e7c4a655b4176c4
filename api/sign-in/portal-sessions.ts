import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { PortalRole } from "../store/portal-tables.js";

/** A signed-in portal user as routes see it. */
export type PortalSession = { id: string; role: PortalRole; address: string; expiresAt: number };

/** Portal bearer tokens are 32 random bytes; only their SHA-256 is stored. */
export const hashPortalToken = (token: string) => createHash("sha256").update(token).digest("hex");

/**
 * Issues an opaque bearer token bound to one role and wallet, valid for a fixed
 * lifetime (never extended). The token is returned once and never stored.
 */
export async function createPortalSession(
  trx: Kysely<Database>,
  params: { role: PortalRole; address: string; ttlSeconds: number; now: number },
): Promise<{ token: string; session: PortalSession }> {
  const token = `pst_${randomBytes(32).toString("base64url")}`;
  const session: PortalSession = {
    id: `ps_${randomUUID().replaceAll("-", "")}`,
    role: params.role,
    address: params.address.toLowerCase(),
    expiresAt: params.now + params.ttlSeconds * 1000,
  };
  await trx
    .insertInto("portal_session")
    .values({
      id: session.id,
      token_hash: hashPortalToken(token),
      role: session.role,
      address: session.address,
      created_at: params.now,
      expires_at: session.expiresAt,
      revoked_at: null,
    })
    .execute();
  return { token, session };
}

/** The live session of a bearer token, or undefined (unknown, expired or revoked). */
export async function findPortalSession(store: Store, token: string, now = Date.now()): Promise<PortalSession | undefined> {
  const row = await store
    .selectFrom("portal_session")
    .select(["id", "role", "address", "expires_at"])
    .where("token_hash", "=", hashPortalToken(token))
    .where("revoked_at", "is", null)
    .where("expires_at", ">", now)
    .executeTakeFirst();
  return row && { id: row.id, role: row.role, address: row.address, expiresAt: Number(row.expires_at) };
}

export async function revokePortalSession(trx: Kysely<Database>, sessionId: string, now = Date.now()): Promise<void> {
  await trx
    .updateTable("portal_session")
    .set({ revoked_at: now })
    .where("id", "=", sessionId)
    .where("revoked_at", "is", null)
    .execute();
}
