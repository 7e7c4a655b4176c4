import type { Kysely } from "kysely";
import { getAddress } from "viem";
import { z } from "zod";
import { type AuditActor, appendAudit, type PortalActor } from "../audit/audit-log.js";
import { keysetPage, type Page } from "../http/cursor.js";
import { problem, problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { PartnerMemberRole, PartnerMemberTable } from "../store/member-tables.js";
import type { Store } from "../store/open-store.js";
import { findPartner } from "./api-keys.js";

export const MEMBER_ROLES = ["admin", "member"] as const satisfies readonly PartnerMemberRole[];
export const MAX_MEMBERS_PER_PARTNER = 100;

export function memberView(row: PartnerMemberTable) {
  return {
    partnerId: row.partner_id,
    address: getAddress(row.address),
    role: row.role,
    createdAt: new Date(Number(row.created_at)).toISOString(),
  };
}

/**
 * Registers a wallet as a console user of a partner (the partner portal). Whoever
 * adds it (an admin, the operator, the partner's own API or one of its members) is
 * audited in the same transaction.
 */
export async function addMember(
  store: Store,
  actor: AuditActor,
  params: { partnerId: string; address: string; role?: PartnerMemberRole; now?: number },
): Promise<PartnerMemberTable> {
  const address = params.address.toLowerCase();
  return store.transaction().execute(async (trx) => {
    const partner = await findPartner(trx, params.partnerId);
    if (partner === undefined) throw problems.notFound(`Partner ${params.partnerId}`);
    const existing = await trx
      .selectFrom("partner_member")
      .select("address")
      .where("partner_id", "=", params.partnerId)
      .where("address", "=", address)
      .executeTakeFirst();
    if (existing !== undefined) {
      throw problem("member_exists", `${getAddress(address)} is already a member of this partner.`);
    }
    const count = await trx
      .selectFrom("partner_member")
      .select((eb) => eb.fn.countAll<string | number>().as("n"))
      .where("partner_id", "=", params.partnerId)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_MEMBERS_PER_PARTNER) {
      throw problem("member_limit_reached", `A partner has at most ${MAX_MEMBERS_PER_PARTNER} members; remove one first.`);
    }
    const row: PartnerMemberTable = {
      partner_id: params.partnerId,
      address,
      role: params.role ?? "member",
      created_at: params.now ?? Date.now(),
    };
    await trx.insertInto("partner_member").values(row).execute();
    await appendAudit(trx, {
      actor,
      action: "partner.member_add",
      target: { type: "partner", id: params.partnerId },
      details: { address: getAddress(address), role: row.role },
    });
    return row;
  });
}

/** Every member of the partner, oldest first (the operator's CLI; a partner has at most 100). */
export async function listMembers(db: Kysely<Database>, params: { partnerId: string }): Promise<PartnerMemberTable[]> {
  return db
    .selectFrom("partner_member")
    .selectAll()
    .where("partner_id", "=", params.partnerId)
    .orderBy("created_at")
    .orderBy("address")
    .execute();
}

/**
 * A page of the partner's members, oldest first, keyset-paged on (created_at, address).
 * The default page holds every member a partner may have (`MAX_MEMBERS_PER_PARTNER`),
 * so a caller that never passes `limit` still sees them all.
 */
export async function pageOfMembers(
  db: Kysely<Database>,
  params: { partnerId: string; cursor?: string; limit?: number },
): Promise<Page<ReturnType<typeof memberView>>> {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit ?? MAX_MEMBERS_PER_PARTNER,
    key: z.object({ t: z.number().int().min(0), a: z.string().regex(/^0x[0-9a-f]{40}$/) }),
    fetch: (after, take) => {
      let query = db.selectFrom("partner_member").selectAll().where("partner_id", "=", params.partnerId);
      if (after !== undefined) {
        query = query.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "address"), ">", tuple(after.t, after.a)));
      }
      return query.orderBy("created_at").orderBy("address").limit(take).execute();
    },
    keyOf: (row) => ({ t: Number(row.created_at), a: row.address }),
    view: (rows) => rows.map(memberView),
  });
}

export async function removeMember(store: Store, actor: PortalActor, params: { partnerId: string; address: string }) {
  const address = params.address.toLowerCase();
  await store.transaction().execute(async (trx) => {
    const result = await trx
      .deleteFrom("partner_member")
      .where("partner_id", "=", params.partnerId)
      .where("address", "=", address)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) throw problems.notFound(`Member ${params.address}`);
    await appendAudit(trx, {
      actor,
      action: "partner.member_remove",
      target: { type: "partner", id: params.partnerId },
      details: { address: getAddress(address) },
    });
  });
}

/** The partners a wallet is a member of (a wallet may serve several). */
export async function membershipsOf(db: Kysely<Database>, address: string) {
  return db
    .selectFrom("partner_member")
    .innerJoin("partner", "partner.id", "partner_member.partner_id")
    .select(["partner_member.partner_id as partnerId", "partner.name as partnerName", "partner_member.role as role"])
    .where("partner_member.address", "=", address.toLowerCase())
    .orderBy("partner_member.created_at")
    .execute();
}
