import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Address } from "viem";
import type { NetworkConfig } from "../../api/config/networks.js";
import { migrateStore, openSqliteStore, type Store } from "../../api/store/open-store.js";

/**
 * A real, migrated SQLite store in a fresh temp directory, for fast unit tests of
 * record modules (no chain, no indexer). `close` removes it.
 */
export async function unitStore(): Promise<{ store: Store; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "unit-store-"));
  const store = openSqliteStore(join(dir, "app.sqlite"));
  await migrateStore(store);
  return {
    store,
    close: async () => {
      await store.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A partner and one awaiting-payment order of it, as the record tests need them. */
export async function seedOrder(store: Store, params: { partnerId: string; orderId: string; purchaseId: string }) {
  const now = Date.now();
  await store
    .insertInto("partner")
    .values({ id: params.partnerId, name: `Partner ${params.partnerId}`, created_at: now })
    .onConflict((oc) => oc.doNothing())
    .execute();
  await store
    .insertInto("orders")
    .values({
      id: params.orderId,
      partner_id: params.partnerId,
      external_order_id: `ext-${params.orderId}`,
      purchase_id: params.purchaseId,
      status: "paid",
      settled_session_id: null,
      fulfilment_reference: null,
      fulfilment_idempotency_key: null,
      fulfilled_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

/** The local network of the record tests: partner `ptr_a` is paid at `UNIT_PAY_TO` in `UNIT_USDC`, by `UNIT_PAYER`. */
export const UNIT_PAY_TO = "0x00000000000000000000000000000000000000aa" as Address;
export const UNIT_USDC = "0x00000000000000000000000000000000000000cc" as Address;
export const UNIT_PAYER = "0x00000000000000000000000000000000000000bb" as Address;

export const unitNetwork: NetworkConfig = {
  name: "local",
  chainId: 31337,
  rpcUrl: "http://127.0.0.1:1",
  usdc: UNIT_USDC,
  certificate: undefined,
  rewardDistributor: undefined,
  subscriptionManager: undefined,
  paymentAddresses: [UNIT_PAY_TO],
  startBlock: 0,
  confirmations: 3,
  pollingIntervalMs: 100,
  wsUrl: undefined,
  relayerPrivateKey: undefined,
};

/** Partner `ptr_a` with its payment address `UNIT_PAY_TO` on the unit network, in a migrated store. */
export async function seedPartnerWithAddress(store: Store, now = Date.now()): Promise<void> {
  await store.insertInto("partner").values({ id: "ptr_a", name: "A", created_at: now }).execute();
  await store
    .insertInto("payment_address")
    .values({ id: "pa_a", partner_id: "ptr_a", network: "local", chain_id: 31337, address: UNIT_PAY_TO, created_at: now })
    .execute();
}
