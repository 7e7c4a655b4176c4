import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { isAddress } from "viem";
import { z } from "zod";
import { keysetPage } from "../http/cursor.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { PortalRole } from "../store/portal-tables.js";
import { checksum } from "../values/checksum-address.js";

/** Who did something in a portal: the signed-in wallet and the role it signed in as. */
export type PortalActor = { role: PortalRole; address: string };

/** Who is recorded in the audit log: a portal's signed-in wallet, or the operator CLI (`npx settlement`). */
export type AuditActor = PortalActor | { role: "operator"; address: "operator" };
export const OPERATOR: AuditActor = { role: "operator", address: "operator" };

export type AuditEntry = {
  id: string;
  seq: number;
  actor: { role: AuditActor["role"]; address: string };
  action: string;
  target: { type: string; id: string };
  details: Record<string, unknown>;
  createdAt: string;
};

/**
 * Appends one entry to the audit log. Call it with the transaction that makes the
 * change, so the change and its record commit together. There is deliberately no
 * function that updates or deletes an entry.
 */
export async function appendAudit(
  trx: Kysely<Database>,
  params: {
    actor: AuditActor;
    action: string;
    target: { type: string; id: string };
    details?: Record<string, unknown>;
    now?: number;
  },
): Promise<void> {
  await trx
    .insertInto("audit_log")
    .values({
      id: `aud_${randomUUID().replaceAll("-", "")}`,
      actor_role: params.actor.role,
      actor_address: params.actor.address.toLowerCase(),
      action: params.action,
      target_type: params.target.type,
      target_id: params.target.id,
      details: JSON.stringify(params.details ?? {}),
      created_at: params.now ?? Date.now(),
    })
    .execute();
}

/** The audit log one page at a time, newest first (the paging helper's cursor `{ s }`). */
export function pageOfAudit(
  store: Store,
  params: { cursor?: string; limit: number; action?: string; actor?: string; targetId?: string },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: z.object({ s: z.number().int() }),
    fetch: (after, take) =>
      listAudit(store, {
        beforeSeq: after?.s,
        limit: take,
        action: params.action,
        actor: params.actor,
        targetId: params.targetId,
      }),
    keyOf: (entry) => ({ s: entry.seq }),
  });
}

/** Newest first; `beforeSeq` continues a page. */
export async function listAudit(
  store: Store,
  params: { beforeSeq?: number; limit: number; action?: string; actor?: string; targetId?: string },
): Promise<AuditEntry[]> {
  let query = store.selectFrom("audit_log").selectAll().orderBy("seq", "desc").limit(params.limit);
  if (params.beforeSeq !== undefined) query = query.where("seq", "<", params.beforeSeq);
  if (params.action !== undefined) query = query.where("action", "=", params.action);
  if (params.actor !== undefined) query = query.where("actor_address", "=", params.actor.toLowerCase());
  if (params.targetId !== undefined) {
    // Investor targets are stored lowercase and shown checksummed: either form finds them.
    const targetId = isAddress(params.targetId, { strict: false }) ? params.targetId.toLowerCase() : params.targetId;
    query = query.where("target_id", "=", targetId);
  }
  const rows = await query.execute();
  return rows.map((row) => ({
    id: row.id,
    seq: Number(row.seq),
    actor: { role: row.actor_role, address: isAddress(row.actor_address) ? checksum(row.actor_address) : row.actor_address },
    action: row.action,
    target: { type: row.target_type, id: isAddress(row.target_id) ? checksum(row.target_id) : row.target_id },
    details: JSON.parse(row.details) as Record<string, unknown>,
    createdAt: new Date(Number(row.created_at)).toISOString(),
  }));
}
