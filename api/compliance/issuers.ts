import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { getAddress } from "viem";
import { type AuditActor, appendAudit } from "../audit/audit-log.js";
import { problem, problems } from "../http/problem.js";
import { createPartner } from "../partners/api-keys.js";
import { paymentAddressesNotOf } from "../partners/payment-addresses.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { IssuerTable } from "../store/portal-tables.js";

export function issuerView(issuer: IssuerTable) {
  return {
    id: issuer.id,
    address: getAddress(issuer.address),
    name: issuer.name,
    partnerId: issuer.partner_id,
    status: issuer.disabled_at === null ? ("active" as const) : ("disabled" as const),
    createdAt: new Date(Number(issuer.created_at)).toISOString(),
  };
}

/**
 * Registers an issuer wallet. Each issuer gets its own partner, so its offerings'
 * checkout sessions, orders and events belong to it, as a commerce partner's do.
 */
export async function registerIssuer(
  store: Store,
  actor: AuditActor,
  params: { address: string; name: string },
): Promise<IssuerTable> {
  const address = params.address.toLowerCase();
  return store.transaction().execute(async (trx) => {
    const existing = await trx.selectFrom("issuer").select("id").where("address", "=", address).executeTakeFirst();
    if (existing !== undefined) {
      throw problem("issuer_exists", `Issuer ${existing.id} holds this wallet.`, { issuerId: existing.id });
    }
    const now = Date.now();
    const partner = await createPartner(trx, { name: params.name });
    const issuer: IssuerTable = {
      id: `iss_${randomUUID().replaceAll("-", "")}`,
      address,
      name: params.name,
      partner_id: partner.id,
      registered_by: actor.address.toLowerCase(),
      created_at: now,
      disabled_at: null,
    };
    await trx.insertInto("issuer").values(issuer).execute();
    await appendAudit(trx, {
      actor,
      action: "issuer.register",
      target: { type: "issuer", id: issuer.id },
      details: { address: getAddress(address), name: params.name, partnerId: partner.id },
      now,
    });
    return issuer;
  });
}

export async function listIssuers(store: Store): Promise<IssuerTable[]> {
  return store.selectFrom("issuer").selectAll().orderBy("created_at", "desc").orderBy("id").execute();
}

/** A disabled issuer can no longer sign in; its open offerings stay as they are until an admin acts. */
export async function disableIssuer(store: Store, actor: AuditActor, issuerId: string): Promise<IssuerTable> {
  return store.transaction().execute(async (trx) => {
    const now = Date.now();
    await trx
      .updateTable("issuer")
      .set({ disabled_at: now })
      .where("id", "=", issuerId)
      .where("disabled_at", "is", null)
      .execute();
    const issuer = await trx.selectFrom("issuer").selectAll().where("id", "=", issuerId).executeTakeFirst();
    if (issuer === undefined) throw problems.notFound(`Issuer ${issuerId}`);
    await appendAudit(trx, { actor, action: "issuer.disable", target: { type: "issuer", id: issuerId }, now });
    return issuer;
  });
}

/** An issuer by id (an offering's issuer: the foreign key says it exists). */
export async function issuerById(db: Kysely<Database>, issuerId: string): Promise<IssuerTable> {
  return db.selectFrom("issuer").selectAll().where("id", "=", issuerId).executeTakeFirstOrThrow();
}

/** Whether this wallet is a registered issuer not disabled (who may sign in as one). */
export async function isActiveIssuer(db: Kysely<Database>, address: string): Promise<boolean> {
  const issuer = await db
    .selectFrom("issuer")
    .select("id")
    .where("address", "=", address)
    .where("disabled_at", "is", null)
    .executeTakeFirst();
  return issuer !== undefined;
}

/** The issuer record of a signed-in issuer wallet (the session middleware already checked it is active). */
export async function issuerOfWallet(db: Kysely<Database>, address: string): Promise<IssuerTable> {
  const issuer = await db.selectFrom("issuer").selectAll().where("address", "=", address.toLowerCase()).executeTakeFirst();
  if (issuer === undefined) throw problems.forbidden("This wallet is not a registered issuer.");
  return issuer;
}

/** Payment addresses held by partners other than the issuer's own (which a draft may not name). */
export async function paymentAddressesOfOtherPartners(
  store: Store,
  issuerAddress: string,
): Promise<{ chain_id: number; address: string }[]> {
  const issuer = await store
    .selectFrom("issuer")
    .select("partner_id")
    .where("address", "=", issuerAddress)
    .executeTakeFirstOrThrow();
  return paymentAddressesNotOf(store, issuer.partner_id);
}
