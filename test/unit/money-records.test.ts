import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionInTransaction } from "../../api/checkout/create-session.js";
import {
  type CheckoutSessionRow,
  getSession,
  moveSession,
  partnerSessionsPage,
  type SessionTransition,
  sessionOfOrder,
  sessionTransitions,
  toCheckoutSession,
} from "../../api/checkout/session-record.js";
import { paymentView, sessionView } from "../../api/checkout/session-view.js";
import type { IndexedTransfer } from "../../api/indexed/indexed-chain.js";
import { getOrder, type OrderRow, ordersByIds, orderTransitions, toOrder } from "../../api/orders/order-record.js";
import { findPayment, insertPayment, movePayment, paymentTransitions } from "../../api/payments/payment-record.js";
import { purchaseTransitions } from "../../api/purchases/purchase-record.js";
import { confirmPendingPayment, recordTransfer } from "../../api/settlement/record-transfer.js";
import { attachPayment } from "../../api/settlement/resolve-payment.js";
import type { SessionStatus } from "../../api/store/database.js";
import { migrateStore, openSqliteStore, type Store } from "../../api/store/open-store.js";
import { allows, edges, ruleFor, TransitionRefused } from "../../api/store/transition-table.js";
import { seedPartnerWithAddress, UNIT_PAY_TO, UNIT_PAYER, UNIT_USDC, unitNetwork } from "../support/unit-store.js";

/**
 * The money records' transition tables, and the record modules applied to a real
 * SQLite store (no chain, no indexer: transfers are given as the facts the index
 * would hold).
 */

const SESSION_STATUSES: SessionStatus[] = ["awaiting_payment", "payment_pending", "settled", "expired"];

describe("transition tables", () => {
  it("the checkout session table allows exactly these changes", () => {
    const legal = edges(sessionTransitions).map((edge) => `${edge.transition}: ${edge.from} -> ${edge.to}`);
    expect(legal.sort()).toEqual(
      [
        "pay: awaiting_payment -> payment_pending",
        "pay: expired -> payment_pending",
        "settle: awaiting_payment -> settled",
        "settle: expired -> settled",
        "confirm: payment_pending -> settled",
        "reopen: payment_pending -> awaiting_payment",
        "expire: awaiting_payment -> expired",
        "attach: awaiting_payment -> settled",
        "attach: expired -> settled",
        "reject_duplicate: payment_pending -> expired",
        "reject_duplicate: settled -> expired",
      ].sort(),
    );
  });

  it("names only known statuses, and every status but settled has a way on", () => {
    for (const edge of edges(sessionTransitions)) {
      expect(SESSION_STATUSES).toContain(edge.from);
      expect(SESSION_STATUSES).toContain(edge.to);
    }
    const leaving = new Set(edges(sessionTransitions).map((edge) => edge.from));
    expect([...leaving].sort()).toEqual(SESSION_STATUSES.slice().sort());
  });

  it("a settled session never goes back to awaiting payment, and nothing but a duplicate leaves settled", () => {
    for (const transition of Object.keys(sessionTransitions) as SessionTransition[]) {
      if (transition === "reject_duplicate") continue;
      expect(allows(sessionTransitions, transition, "settled"), transition).toBe(false);
    }
    expect(() => ruleFor("checkout session", sessionTransitions, "expire", "settled")).toThrow(TransitionRefused);
    expect(() => ruleFor("checkout session", sessionTransitions, "confirm", "awaiting_payment")).toThrow(
      /transition "confirm" is not allowed from "awaiting_payment"/,
    );
  });

  it("an unresolved payment credited by hand never lands on a session whose payment is confirming", () => {
    expect(allows(sessionTransitions, "attach", "payment_pending")).toBe(false);
    expect(allows(sessionTransitions, "attach", "settled")).toBe(false);
  });

  it("the payment table: only unresolved payments are resolved by hand, only credited ones reorg", () => {
    for (const status of ["pending", "settled", "attached", "refund_requested", "reorged"] as const) {
      expect(allows(paymentTransitions, "attach", status), status).toBe(false);
      expect(allows(paymentTransitions, "request_refund", status), status).toBe(false);
    }
    expect(allows(paymentTransitions, "attach", "unresolved")).toBe(true);
    expect(allows(paymentTransitions, "reorg", "settled")).toBe(true);
    expect(allows(paymentTransitions, "reorg", "attached")).toBe(true);
    expect(allows(paymentTransitions, "reorg", "pending")).toBe(false);
    expect(allows(paymentTransitions, "reorg", "unresolved")).toBe(false);
    expect(allows(paymentTransitions, "confirm", "unresolved")).toBe(false);
    expect(paymentTransitions.restore_attached.to).toBe("attached");
  });

  it("the order and purchase tables: credit once, fulfil a paid order, release held units once", () => {
    expect(edges(orderTransitions).map((edge) => `${edge.from} -> ${edge.to}`)).toEqual([
      "awaiting_payment -> paid",
      "paid -> fulfilled",
    ]);
    expect(allows(orderTransitions, "fulfil", "awaiting_payment")).toBe(false);
    expect(allows(orderTransitions, "credit", "paid")).toBe(false);
    expect(allows(purchaseTransitions, "release", "held")).toBe(true);
    expect(allows(purchaseTransitions, "release", "released")).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Row converters: one convention (bigint money, boolean flags, epoch ms, EIP-55 addresses).

/** A row as a store may hand it back: Postgres gives 64-bit integers as strings, SQLite flags as 0/1. */
const sessionRow = (change: Partial<Record<keyof CheckoutSessionRow, unknown>> = {}): CheckoutSessionRow =>
  ({
    id: "cs_row",
    partner_id: "ptr_a",
    order_id: "ord_row",
    kind: "commerce",
    status: "awaiting_payment",
    network: "local",
    chain_id: 31337,
    token_address: "0x036cbd53842c5426634e7929541ec2318f3dcf7e",
    // Upper-case hex, as an older row or a hand-edited one may hold it.
    payment_address: "0x8BA1F109551BD432803012645AC136DDD64DBA72",
    total_price_usdc: "25000000",
    amount_offset: 17,
    amount_due: "25000017",
    required_payer: null,
    external_order_id: "order-row",
    external_product_id: "sku",
    product_name: "Tee",
    product_category: "apparel",
    quantity: 2,
    shipping_required: 1,
    certificate_enabled: 0,
    contact_json: null,
    delivery_json: null,
    metadata_json: null,
    expires_at: "1795000000000",
    late_until: 1795600000000,
    created_at: "1794998200000",
    updated_at: 1794998200000,
    ...change,
  }) as CheckoutSessionRow;

describe("row converters", () => {
  it("a session row becomes a CheckoutSession: EIP-55 addresses whatever the stored case, bigint money, boolean flags, epoch ms", () => {
    const session = toCheckoutSession(sessionRow({ required_payer: "0xAB5801A7D398351B8BE11C439E05C5B3259AEC9B".toLowerCase() }));
    expect(session.tokenAddress).toBe("0x036CbD53842c5426634e7929541eC2318f3dCF7e");
    expect(session.paymentAddress).toBe(getAddress("0x8ba1f109551bd432803012645ac136ddd64dba72"));
    expect(session.paymentAddress).toBe("0x8ba1f109551bD432803012645Ac136ddd64DBA72");
    expect(session.requiredPayer).toBe("0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B");
    expect(session.totalPriceUsdc).toBe(25_000_000n);
    expect(session.amountDue).toBe(25_000_017n);
    expect(session.shippingRequired).toBe(true);
    expect(session.certificateEnabled).toBe(false);
    expect(session.expiresAt).toBe(1_795_000_000_000);
    expect(session.createdAt).toBe(1_794_998_200_000);
    expect(session.quantity).toBe(2);
    expect(session.contact).toBeNull();
    expect(session.metadata).toBeNull();
  });

  it("flags stored as 0/1 (or strings of them) are booleans; JSON columns are parsed once", () => {
    const session = toCheckoutSession(
      sessionRow({
        shipping_required: "0",
        certificate_enabled: "1",
        contact_json: JSON.stringify({ email: "a@example.com" }),
        metadata_json: JSON.stringify({ cart: "42" }),
      }),
    );
    expect(session.shippingRequired).toBe(false);
    expect(session.certificateEnabled).toBe(true);
    expect(session.contact).toEqual({ email: "a@example.com" });
    expect(session.metadata).toEqual({ cart: "42" });
  });

  it("views answer the wire's forms (EIP-55, decimal strings, ISO times)", () => {
    const session = toCheckoutSession(sessionRow());
    expect(paymentView(session)).toMatchObject({
      recipient: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
      tokenAddress: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      amount: "25000017",
      totalPriceUsdc: "25000000",
      uri: "ethereum:0x036CbD53842c5426634e7929541eC2318f3dCF7e@31337/transfer?address=0x8ba1f109551bD432803012645Ac136ddd64DBA72&uint256=25000017",
    });
    expect(sessionView(session, { orderId: "ord_row", purchaseId: "0x01" })).toMatchObject({
      expiresAt: new Date(1_795_000_000_000).toISOString(),
      createdAt: new Date(1_794_998_200_000).toISOString(),
      shippingRequired: true,
      certificate: { enabled: false },
      product: { externalProductId: "sku", name: "Tee", category: "apparel", quantity: 2 },
    });
  });

  it("an order row becomes an Order with epoch-ms instants", () => {
    const row = {
      id: "ord_1",
      partner_id: "ptr_a",
      external_order_id: "order-1",
      purchase_id: `0x${"ab".repeat(32)}`,
      status: "fulfilled",
      settled_session_id: "cs_1",
      fulfilment_reference: "ship-1",
      fulfilment_idempotency_key: "key-1",
      fulfilled_at: "1795000000500",
      created_at: "1795000000000",
      updated_at: 1795000000500,
    } as unknown as OrderRow;
    expect(toOrder(row)).toEqual({
      id: "ord_1",
      partnerId: "ptr_a",
      externalOrderId: "order-1",
      purchaseId: `0x${"ab".repeat(32)}`,
      status: "fulfilled",
      settledSessionId: "cs_1",
      fulfilmentReference: "ship-1",
      fulfilmentIdempotencyKey: "key-1",
      fulfilledAt: 1_795_000_000_500,
      createdAt: 1_795_000_000_000,
      updatedAt: 1_795_000_000_500,
    });
    expect(toOrder({ ...row, fulfilled_at: null }).fulfilledAt).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// Records on a real store.

const PAY_TO = UNIT_PAY_TO;
const USDC = UNIT_USDC;
const PAYER = UNIT_PAYER;

const network = unitNetwork;

let dir: string;
let store: Store;
let txCounter = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "money-records-"));
  store = openSqliteStore(join(dir, "app.sqlite"));
  await migrateStore(store);
  const now = Date.now();
  await seedPartnerWithAddress(store, now);
});

afterAll(async () => {
  await store?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function createSession(externalOrderId: string, total = 25_000_000n) {
  const created = await store.transaction().execute((trx) =>
    createSessionInTransaction(
      trx,
      { networks: [network] },
      {
        partnerId: "ptr_a",
        kind: "commerce",
        externalOrderId,
        externalProductId: "sku",
        productName: "Tee",
        productCategory: "apparel",
        quantity: 1,
        totalPriceUsdc: total,
        shippingRequired: false,
        certificateEnabled: false,
      },
    ),
  );
  return created;
}

/** A transfer as the index would hold it, mined now in `blockNumber`. */
function transfer(value: bigint, blockNumber: bigint): IndexedTransfer {
  txCounter++;
  return {
    chainId: 31337,
    transactionHash: `0x${txCounter.toString(16).padStart(64, "0")}` as Hex,
    logIndex: 0,
    token: USDC,
    from: PAYER,
    to: PAY_TO,
    value,
    blockNumber,
    blockHash: `0x${(txCounter + 1_000_000).toString(16).padStart(64, "0")}` as Hex,
    blockTimestamp: BigInt(Math.floor(Date.now() / 1000) + 1),
    transactionIndex: 0,
  };
}

describe("checkout session record", () => {
  it("an illegal change throws and changes nothing; a guard that lost a race answers false", async () => {
    const { session } = await createSession("order-guard");
    await expect(
      store.transaction().execute((trx) => moveSession(trx, { session, transition: "confirm", now: Date.now() })),
    ).rejects.toThrow(TransitionRefused);
    expect((await getSession(store, session.id)).status).toBe("awaiting_payment");
    // Read as awaiting_payment, but another writer expired it meanwhile.
    await store.transaction().execute((trx) => moveSession(trx, { session, transition: "expire", now: Date.now() }));
    const moved = await store.transaction().execute((trx) => moveSession(trx, { session, transition: "pay", now: Date.now() }));
    expect(moved).toBe(false);
    expect((await getSession(store, session.id)).status).toBe("expired");
  });

  it("a created session is stored lower case and read back EIP-55, through every read", async () => {
    const { session, orderId } = await createSession("order-case");
    const stored = await store
      .selectFrom("checkout_session")
      .select(["token_address", "payment_address"])
      .where("id", "=", session.id)
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ token_address: USDC.toLowerCase(), payment_address: PAY_TO.toLowerCase() });
    const read = await getSession(store, session.id);
    expect(read).toEqual(session);
    expect(read.paymentAddress).toBe(getAddress(PAY_TO));
    expect(read.tokenAddress).toBe(getAddress(USDC));
    expect((await sessionOfOrder(store, await getOrder(store, orderId)))?.id).toBe(session.id);
    const page = await partnerSessionsPage(store, { partnerId: "ptr_a", take: 100 });
    expect(page.find((listed) => listed.id === session.id)).toEqual(session);
    expect(page.map((listed) => listed.createdAt)).toEqual([...page.map((listed) => listed.createdAt)].sort((a, b) => b - a));
    const orders = await ordersByIds(store, [orderId, orderId]);
    expect([...orders.keys()]).toEqual([orderId]);
    expect(orders.get(orderId)?.status).toBe("awaiting_payment");
  });

  it("session creation inside the caller's transaction rolls back with it", async () => {
    const attempt = store.transaction().execute(async (trx) => {
      await createSessionInTransaction(
        trx,
        { networks: [network] },
        {
          partnerId: "ptr_a",
          kind: "commerce",
          externalOrderId: "order-rolled-back",
          externalProductId: "sku",
          productName: "Tee",
          productCategory: "apparel",
          quantity: 1,
          totalPriceUsdc: 1_000_000n,
          shippingRequired: false,
          certificateEnabled: false,
        },
      );
      throw new Error("the caller's next step failed");
    });
    await expect(attempt).rejects.toThrow("the caller's next step failed");
    const orders = await store.selectFrom("orders").select("id").where("external_order_id", "=", "order-rolled-back").execute();
    expect(orders).toEqual([]);
    const reservations = await store
      .selectFrom("amount_reservation")
      .select("session_id")
      .where("total_price_usdc", "=", "1000000")
      .execute();
    expect(reservations).toEqual([]);
  });
});

describe("one order, one credit", () => {
  it("a payment attached by hand is refused while a payment of the order's session is confirming", async () => {
    const { session, orderId } = await createSession("order-pending-attach");
    // The customer's exact transfer, one confirmation of three: pending.
    const exact = transfer(session.amountDue, 100n);
    const pending = await recordTransfer(store, { transfer: exact, network, head: 100n });
    expect(pending.status).toBe("pending");
    expect((await getSession(store, session.id)).status).toBe("payment_pending");
    // Another transfer, of an amount no session holds: unresolved, the partner's to resolve.
    const stray = transfer(24_000_000n, 100n);
    const unresolved = await recordTransfer(store, { transfer: stray, network, head: 100n });
    expect(unresolved.status).toBe("unresolved");

    // Crediting the stray one now would let the confirming one credit the order again
    // (before: the attach settled the order, and the confirmation then expired the very
    // session that settled it).
    const attach = store.transaction().execute((trx) =>
      attachPayment(trx, {
        chainId: 31337,
        transactionHash: stray.transactionHash,
        logIndex: 0,
        orderId,
        partnerId: "ptr_a",
        networks: [network],
        headOf: () => 100n,
      }),
    );
    await expect(attach).rejects.toMatchObject({ code: "payment_in_progress" });
    expect((await findPayment(store, { chainId: 31337, transactionHash: stray.transactionHash, logIndex: 0 }))?.status).toBe(
      "unresolved",
    );

    // The confirming payment settles the order through its session, once.
    expect(await confirmPendingPayment(store, { payment: pending, where: { kind: "indexed" }, network, head: 102n })).toBe(
      "settled",
    );
    const order = await getOrder(store, orderId);
    expect(order.status).toBe("paid");
    expect(order.settledSessionId).toBe(session.id);
    expect((await getSession(store, session.id)).status).toBe("settled");
    const settledEvents = await store
      .selectFrom("event")
      .select("type")
      .where("ordering_key", "=", orderId)
      .where("type", "=", "purchase.settled")
      .execute();
    expect(settledEvents).toHaveLength(1);
  });

  it("a duplicate never expires the session that settled its order", async () => {
    const { session, orderId } = await createSession("order-duplicate-guard");
    const paid = await recordTransfer(store, { transfer: transfer(session.amountDue, 200n), network, head: 202n });
    expect(paid.status).toBe("settled");
    const settled = await getSession(store, session.id);
    expect(settled.status).toBe("settled");
    // reject_duplicate is allowed from settled, but its guard keeps the order's own session.
    const moved = await store
      .transaction()
      .execute((trx) => moveSession(trx, { session: settled, transition: "reject_duplicate", now: Date.now() }));
    expect(moved).toBe(false);
    expect((await getSession(store, session.id)).status).toBe("settled");
    expect((await getOrder(store, orderId)).settledSessionId).toBe(session.id);
  });

  it("a payment transition not in the table throws", async () => {
    const { session } = await createSession("order-payment-illegal");
    const paid = await recordTransfer(store, { transfer: transfer(session.amountDue, 300n), network, head: 310n });
    expect(paid.status).toBe("settled");
    await expect(
      store.transaction().execute((trx) => movePayment(trx, { payment: paid, transition: "request_refund", now: Date.now() })),
    ).rejects.toThrow(TransitionRefused);
  });
});

describe("payment record", () => {
  it("a Payment is stored lower case and read back EIP-55 by a key in any case; a move sets domain fields", async () => {
    const { session } = await createSession("order-payment-forms");
    const upperHash = `0x${"AB".repeat(32)}` as Hex;
    const payer = getAddress("0x00000000000000000000000000000000000000bb");
    const payment = {
      chainId: 31337,
      transactionHash: upperHash,
      logIndex: 7,
      partnerId: "ptr_a",
      sessionId: null,
      status: "unresolved" as const,
      reason: "unmatched",
      from: payer,
      to: getAddress(PAY_TO),
      amount: 1_234_567n,
      blockNumber: 42n,
      blockHash: `0x${"CD".repeat(32)}` as Hex,
      minedAt: 1_795_000_000_000,
      resolution: null,
      createdAt: 1_795_000_000_123,
      updatedAt: 1_795_000_000_123,
    };
    expect(await store.transaction().execute((trx) => insertPayment(trx, payment))).toBe(true);
    // Recorded once: the key (lower-cased inside the record) is the replay guard whatever the case.
    expect(
      await store
        .transaction()
        .execute((trx) => insertPayment(trx, { ...payment, transactionHash: upperHash.toLowerCase() as Hex })),
    ).toBe(false);

    const row = await store.selectFrom("payment").selectAll().where("log_index", "=", 7).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      transaction_hash: upperHash.toLowerCase(),
      from_address: PAYER,
      to_address: PAY_TO,
      block_hash: `0x${"cd".repeat(32)}`,
      amount: "1234567",
      block_timestamp: 1_795_000_000,
    });

    const found = await findPayment(store, { chainId: 31337, transactionHash: upperHash, logIndex: 7 });
    expect(found).toEqual({
      ...payment,
      transactionHash: upperHash.toLowerCase(),
      blockHash: `0x${"cd".repeat(32)}`,
    });

    const linked = await store.transaction().execute((trx) =>
      movePayment(trx, {
        payment: found!,
        transition: "link_to_session",
        now: 1_795_000_001_000,
        set: { sessionId: session.id, reason: "underpaid" },
      }),
    );
    expect(linked).toBe(true);
    expect(await findPayment(store, payment)).toMatchObject({
      sessionId: session.id,
      partnerId: "ptr_a",
      reason: "underpaid",
      resolution: null,
      status: "unresolved",
      updatedAt: 1_795_000_001_000,
    });
  });
});
