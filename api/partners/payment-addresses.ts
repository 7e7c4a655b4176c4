import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { getAddress } from "viem";
import { recordedStart } from "../config/startup.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";

export type PaymentAddressView = {
  id: string;
  partnerId: string;
  network: string;
  chainId: number;
  address: string;
  /**
   * Whether the running indexer watches it: false for an address added after the
   * indexer's last start, whose payments are seen only once it restarts with it.
   */
  watching: boolean;
  createdAt: string;
};

/** The addresses the indexer of this index schema started with, per network (lower-case). */
export async function watchedByIndexer(store: Store, indexSchema: string): Promise<Map<string, Set<string>>> {
  const recorded = await recordedStart(store, indexSchema);
  return new Map(Object.entries(recorded?.watched ?? {}).map(([network, addresses]) => [network, new Set(addresses)]));
}

export async function listPaymentAddresses(
  store: Store,
  params: { indexSchema: string; partnerId?: string },
): Promise<PaymentAddressView[]> {
  let query = store.selectFrom("payment_address").selectAll().orderBy("created_at").orderBy("id");
  if (params.partnerId !== undefined) query = query.where("partner_id", "=", params.partnerId);
  const [rows, watched] = await Promise.all([query.execute(), watchedByIndexer(store, params.indexSchema)]);
  return rows.map((row) => ({
    id: row.id,
    partnerId: row.partner_id,
    network: row.network,
    chainId: Number(row.chain_id),
    address: getAddress(row.address),
    watching: watched.get(row.network)?.has(row.address.toLowerCase()) ?? false,
    createdAt: new Date(Number(row.created_at)).toISOString(),
  }));
}

/** The partner a payment address on this chain belongs to, if any (one owner per chain and address). */
export async function paymentAddressOwner(
  db: Kysely<Database>,
  params: { chainId: number; address: string },
): Promise<string | undefined> {
  const row = await db
    .selectFrom("payment_address")
    .select("partner_id")
    .where("chain_id", "=", params.chainId)
    // The store keeps payment addresses lower case.
    .where("address", "=", params.address.toLowerCase())
    .executeTakeFirst();
  return row?.partner_id;
}

/** The payment addresses on one chain (lower case, as the index keeps them), of one partner or of every partner. */
export async function paymentAddressesOnChain(
  db: Kysely<Database>,
  params: { chainId: number; partnerId?: string },
): Promise<{ address: string; partnerId: string }[]> {
  let query = db
    .selectFrom("payment_address")
    .select(["address", "partner_id"])
    .where("chain_id", "=", params.chainId)
    .orderBy("address");
  if (params.partnerId !== undefined) query = query.where("partner_id", "=", params.partnerId);
  const rows = await query.execute();
  return rows.map((row) => ({ address: row.address.toLowerCase(), partnerId: row.partner_id }));
}

/**
 * Records that a payment address belongs to a partner: the one writer of
 * `payment_address`. An address on a chain has one owner; when another partner
 * (or this one) holds it already, nothing changes and the answer is undefined;
 * otherwise it is the new record's id.
 */
export async function insertPaymentAddress(
  db: Kysely<Database>,
  params: { partnerId: string; network: string; chainId: number; address: string },
): Promise<string | undefined> {
  const id = `pad_${randomUUID()}`;
  const inserted = await db
    .insertInto("payment_address")
    .values({
      id,
      partner_id: params.partnerId,
      network: params.network,
      chain_id: params.chainId,
      // The store keeps payment addresses lower case.
      address: params.address.toLowerCase(),
      created_at: Date.now(),
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return inserted.numInsertedOrUpdatedRows === 1n ? id : undefined;
}

/** A partner's payment addresses on every network, oldest first. */
export async function paymentAddressesOf(store: Store, partnerId: string) {
  return store
    .selectFrom("payment_address")
    .select(["network", "chain_id", "address"])
    .where("partner_id", "=", partnerId)
    .orderBy("created_at")
    .execute();
}

/** Payment addresses on every chain held by any partner but this one (lower case). */
export async function paymentAddressesNotOf(db: Kysely<Database>, partnerId: string) {
  return db.selectFrom("payment_address").select(["chain_id", "address"]).where("partner_id", "!=", partnerId).execute();
}
