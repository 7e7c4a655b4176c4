import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { problem } from "../http/problem.js";
import type { Database } from "../store/database.js";

/** Stable hash of a request body (keys sorted), so a replay can be told from a different request. */
export function requestHash(body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(
        Object.keys(value as object)
          .sort()
          .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
      );
    }
    return value;
  };
  return createHash("sha256")
    .update(JSON.stringify(canonical(body)))
    .digest("hex");
}

export const idempotencyConflict = () =>
  problem("idempotency_conflict", "Send the same body again to get the original answer, or use a new idempotency key.");

/** The resource an earlier request with this key created, or undefined for a new key. */
export async function findIdempotentResource(
  db: Kysely<Database>,
  params: { partnerId: string; scope: string; key: string; hash: string },
): Promise<string | undefined> {
  const record = await db
    .selectFrom("idempotency_record")
    .select(["request_hash", "resource_id"])
    .where("partner_id", "=", params.partnerId)
    .where("scope", "=", params.scope)
    .where("idempotency_key", "=", params.key)
    .executeTakeFirst();
  if (record === undefined) return undefined;
  if (record.request_hash !== params.hash) throw idempotencyConflict();
  return record.resource_id;
}

/** Records the key; returns false when a concurrent request recorded it first. */
export async function recordIdempotentResource(
  trx: Kysely<Database>,
  params: { partnerId: string; scope: string; key: string; hash: string; resourceId: string; now: number },
): Promise<boolean> {
  const result = await trx
    .insertInto("idempotency_record")
    .values({
      partner_id: params.partnerId,
      scope: params.scope,
      idempotency_key: params.key,
      request_hash: params.hash,
      resource_id: params.resourceId,
      created_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return result.numInsertedOrUpdatedRows === 1n;
}
