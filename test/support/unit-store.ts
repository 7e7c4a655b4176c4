import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
