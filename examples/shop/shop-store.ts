import Database from "better-sqlite3";
import type { ProcessedEventStore, SettlementEvent } from "../../client/src/index.js";

export type ShopOrder = {
  id: string;
  lines_json: string;
  total_price_usdc: string;
  status: "awaiting_payment" | "paid" | "fulfilled";
  checkout_attempt: number;
  service_order_id: string | null;
  session_id: string | null;
  fulfilment_reference: string | null;
  certificate_status: string | null;
  certificate_transaction: string | null;
  created_at: number;
};

/**
 * The shop's own SQLite file: carts, orders and the ids of the events it has
 * handled (the `ProcessedEventStore` the webhook receiver needs).
 */
export function openShopStore(file: string) {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec(`
    create table if not exists cart_line (cart_id text not null, product_id text not null, quantity integer not null,
      primary key (cart_id, product_id));
    create table if not exists shop_order (id text primary key, lines_json text not null, total_price_usdc text not null,
      status text not null, checkout_attempt integer not null default 0, service_order_id text, session_id text,
      fulfilment_reference text, certificate_status text, certificate_transaction text, created_at integer not null);
    create table if not exists processed_event (id text primary key, recorded_at integer not null, processed_at integer);
    create table if not exists applied_event (id text not null, type text not null, payload text not null, applied_at integer not null);
  `);

  const processedEvents: ProcessedEventStore = {
    async recordIfNew(eventId) {
      return (
        db.prepare("insert or ignore into processed_event (id, recorded_at) values (?, ?)").run(eventId, Date.now()).changes === 1
      );
    },
    async markProcessed(eventId) {
      db.prepare("update processed_event set processed_at = ? where id = ?").run(Date.now(), eventId);
    },
    async release(eventId) {
      db.prepare("delete from processed_event where id = ? and processed_at is null").run(eventId);
    },
  };

  return {
    processedEvents,
    addToCart(cartId: string, productId: string, quantity: number) {
      db.prepare(
        `insert into cart_line (cart_id, product_id, quantity) values (?, ?, ?)
         on conflict (cart_id, product_id) do update set quantity = min(quantity + excluded.quantity, 99)`,
      ).run(cartId, productId, quantity);
    },
    cart(cartId: string): { product_id: string; quantity: number }[] {
      return db.prepare("select product_id, quantity from cart_line where cart_id = ? order by product_id").all(cartId) as never;
    },
    clearCart(cartId: string) {
      db.prepare("delete from cart_line where cart_id = ?").run(cartId);
    },
    createOrder(order: { id: string; lines: { productId: string; quantity: number }[]; totalPriceUsdc: bigint }) {
      db.prepare(
        "insert into shop_order (id, lines_json, total_price_usdc, status, created_at) values (?, ?, ?, 'awaiting_payment', ?)",
      ).run(order.id, JSON.stringify(order.lines), order.totalPriceUsdc.toString(), Date.now());
    },
    order(id: string): ShopOrder | undefined {
      return db.prepare("select * from shop_order where id = ?").get(id) as ShopOrder | undefined;
    },
    updateOrder(id: string, changes: Partial<Omit<ShopOrder, "id">>) {
      const keys = Object.keys(changes);
      if (keys.length === 0) return;
      db.prepare(`update shop_order set ${keys.map((key) => `${key} = @${key}`).join(", ")} where id = @id`).run({
        ...changes,
        id,
      });
    },
    recordApplied(event: SettlementEvent) {
      db.prepare("insert into applied_event (id, type, payload, applied_at) values (?, ?, ?, ?)").run(
        event.id,
        event.type,
        JSON.stringify(event),
        Date.now(),
      );
    },
    /** Every event whose effect the shop applied, in order (a duplicate would show twice). */
    appliedEvents(): SettlementEvent[] {
      return (db.prepare("select payload from applied_event order by rowid").all() as { payload: string }[]).map(
        (row) => JSON.parse(row.payload) as SettlementEvent,
      );
    },
    close() {
      db.close();
    },
  };
}

export type ShopStore = ReturnType<typeof openShopStore>;
