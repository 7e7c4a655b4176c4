import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionInTransaction } from "../../api/checkout/create-session.js";
import type { IndexedTransfer } from "../../api/indexed/indexed-chain.js";
import {
  movePayment,
  type PaymentRow,
  payingPaymentsOfSessions,
  purchaseIdsPaidBy,
  reorgedPayments,
  toPayment,
} from "../../api/payments/payment-record.js";
import {
  countUnpaidPurchases,
  findInvestorPurchase,
  findPurchase,
  insertPurchase,
  offeringsOfOrders,
  type Purchase,
  type RwaPurchaseRow,
  releaseCandidates,
  releasePurchase,
  settledPurchasesOfOffering,
  settledUnitsOfExhaustedOfferings,
  toPurchase,
  unpaidUnitsOfUnverified,
} from "../../api/purchases/purchase-record.js";
import { recordTransfer } from "../../api/settlement/record-transfer.js";
import { migrateStore, openPgliteStore, openSqliteStore, type Store } from "../../api/store/open-store.js";
import { TransitionRefused } from "../../api/store/transition-table.js";
import { seedPartnerWithAddress, UNIT_PAY_TO, UNIT_PAYER, UNIT_USDC, unitNetwork } from "../support/unit-store.js";

/**
 * The payment and RWA purchase records read their rows into domain types in one
 * converter each (bigint money, checksummed addresses, epoch milliseconds), and keep
 * addresses and hashes lower case in the store whatever case a caller gives.
 * No chain, no indexer: real SQLite and Postgres (PGlite) stores, transfers given as the index would hold them.
 */

const PAY_TO = UNIT_PAY_TO;
const USDC = UNIT_USDC;
const PAYER = UNIT_PAYER;
/** Mixed case on purpose: its EIP-55 form differs from its lower-case one. */
const INVESTOR = getAddress("0x52908400098527886e0f7030069857d2e4169ee7");

const network = unitNetwork;

async function seed(store: Store) {
  await migrateStore(store);
  const now = Date.now();
  await seedPartnerWithAddress(store, now);
  await store
    .insertInto("issuer")
    .values({
      id: "iss_a",
      address: "0x00000000000000000000000000000000000000ee",
      name: "Issuer A",
      partner_id: "ptr_a",
      registered_by: "test",
      created_at: now,
      disabled_at: null,
    })
    .execute();
  await store
    .insertInto("offering")
    .values({
      id: "off_a",
      issuer_id: "iss_a",
      status: "open",
      name: "Bond A",
      description: "",
      network: "local",
      chain_id: 31337,
      asset_token: null,
      unit_price_usdc: "1000000",
      min_units: 1,
      max_units_per_investor: 10,
      total_units: 100,
      units_available: 100,
      opens_at: now - 1000,
      closes_at: now + 86_400_000,
      settlement_address: PAY_TO,
      certificate_enabled: 0,
      require_kyc: 0,
      require_accreditation: 0,
      allowed_jurisdictions: null,
      blocked_jurisdictions: null,
      review_reason: null,
      paused_by: null,
      close_reason: null,
      submitted_at: null,
      approved_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

describe("payment record converter", () => {
  it("reads money and blocks as bigint, addresses checksummed, the block's seconds as epoch milliseconds", () => {
    const row: PaymentRow = {
      chain_id: 31337,
      transaction_hash: `0x${"ab".repeat(32)}`,
      log_index: 2,
      partner_id: "ptr_a",
      session_id: null,
      status: "unresolved",
      reason: "unmatched",
      from_address: INVESTOR.toLowerCase(),
      to_address: PAY_TO,
      amount: "123456789012345678901234567890",
      block_number: 9_007_199_254,
      block_hash: `0x${"cd".repeat(32)}`,
      block_timestamp: 1_790_000_000,
      resolution: null,
      created_at: 1_790_000_001_234,
      updated_at: 1_790_000_002_345,
    };
    const payment = toPayment(row);
    expect(payment.amount).toBe(123456789012345678901234567890n);
    expect(payment.from).toBe(INVESTOR);
    expect(payment.to).toBe(getAddress(PAY_TO));
    expect(payment.blockNumber).toBe(9_007_199_254n);
    expect(payment.minedAt).toBe(1_790_000_000_000);
    expect(payment.createdAt).toBe(1_790_000_001_234);
    expect(payment.transactionHash).toBe(row.transaction_hash);
  });

  it("accepts the integer columns as Postgres drivers hand back int8 (strings)", () => {
    const row = {
      chain_id: "31337",
      transaction_hash: `0x${"01".repeat(32)}`,
      log_index: "0",
      partner_id: null,
      session_id: null,
      status: "pending",
      reason: null,
      from_address: PAYER,
      to_address: PAY_TO,
      amount: "5",
      block_number: "12",
      block_hash: `0x${"02".repeat(32)}`,
      block_timestamp: "1790000000",
      resolution: null,
      created_at: "1790000001000",
      updated_at: "1790000001000",
    } as unknown as PaymentRow;
    const payment = toPayment(row);
    expect(payment).toMatchObject({ chainId: 31337, logIndex: 0, blockNumber: 12n, minedAt: 1_790_000_000_000 });
    expect(payment.createdAt).toBe(1_790_000_001_000);
  });
});

describe("RWA purchase record converter", () => {
  it("converts Postgres int8 strings in one place", () => {
    const row = {
      id: "pur_pg",
      offering_id: "off_a",
      investor: INVESTOR.toLowerCase(),
      recipient: PAYER,
      units: "3",
      unit_price_usdc: "1000000",
      total_price_usdc: "3000000",
      network: "local",
      chain_id: "31337",
      session_id: null,
      expires_at: "1790000000000",
      released_at: "1790000000500",
      created_at: "1789999999000",
    } as unknown as RwaPurchaseRow;
    expect(toPurchase(row)).toEqual({
      id: "pur_pg",
      offeringId: "off_a",
      investor: INVESTOR,
      recipient: getAddress(PAYER),
      units: 3,
      unitPriceUsdc: 1_000_000n,
      totalPriceUsdc: 3_000_000n,
      network: "local",
      chainId: 31337,
      sessionId: null,
      expiresAt: 1_790_000_000_000,
      releasedAt: 1_790_000_000_500,
      createdAt: 1_789_999_999_000,
    });
  });
});

const dialects: Array<[string, (dir: string) => Store]> = [
  ["SQLite", (dir) => openSqliteStore(join(dir, "app.sqlite"))],
  ["Postgres (PGlite)", (dir) => openPgliteStore(join(dir, "pg"))],
];

describe.each(dialects)("on %s", (_name, open) => {
  let dir: string;
  let store: Store;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "portal-records-"));
    store = open(dir);
    await seed(store);
  });

  afterAll(async () => {
    await store?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("RWA purchase record", () => {
    const purchase = (id: string, overrides: Partial<Purchase> = {}): Purchase => ({
      id,
      offeringId: "off_a",
      investor: INVESTOR,
      recipient: INVESTOR,
      units: 2,
      unitPriceUsdc: 1_000_000n,
      totalPriceUsdc: 2_000_000n,
      network: "local",
      chainId: 31337,
      sessionId: null,
      expiresAt: Date.now() - 60_000,
      releasedAt: null,
      createdAt: Date.now(),
      ...overrides,
    });

    it("stores addresses lower case and reads back the same Purchase, found by its investor in any case", async () => {
      const written = purchase("pur_roundtrip");
      await store.transaction().execute((trx) => insertPurchase(trx, written));
      const row = await store.selectFrom("rwa_purchase").selectAll().where("id", "=", written.id).executeTakeFirstOrThrow();
      expect(row.investor).toBe(INVESTOR.toLowerCase());
      expect(row.total_price_usdc).toBe("2000000");
      expect(await findPurchase(store, written.id)).toEqual(written);
      const upper = `0x${INVESTOR.slice(2).toUpperCase()}`;
      expect(await findInvestorPurchase(store, { investor: upper, purchaseId: written.id })).toEqual(written);
      expect(await findInvestorPurchase(store, { investor: PAYER, purchaseId: written.id })).toBeUndefined();
    });

    it("an unpaid purchase counts against its investor until released, and is released once", async () => {
      const held = purchase("pur_release");
      await store.transaction().execute((trx) => insertPurchase(trx, held));
      const before = await countUnpaidPurchases(store, { offeringId: "off_a", investor: INVESTOR });
      const candidates = await releaseCandidates(store, { offeringIds: ["off_a"], expiredBefore: Date.now(), limit: 10 });
      expect(candidates.find((candidate) => candidate.id === held.id)).toEqual({
        id: held.id,
        chainId: 31337,
        expiresAt: held.expiresAt,
        sessionId: null,
        sessionStatus: null,
      });
      const now = Date.now();
      expect(await store.transaction().execute((trx) => releasePurchase(trx, { purchase: held, now }))).toBe(true);
      // Read as held, released meanwhile: the guard answers false.
      expect(await store.transaction().execute((trx) => releasePurchase(trx, { purchase: held, now }))).toBe(false);
      const released = await findPurchase(store, held.id);
      expect(released?.releasedAt).toBe(now);
      await expect(store.transaction().execute((trx) => releasePurchase(trx, { purchase: released!, now }))).rejects.toThrow(
        TransitionRefused,
      );
      expect(await countUnpaidPurchases(store, { offeringId: "off_a", investor: INVESTOR.toLowerCase() })).toBe(before - 1);
      const after = await releaseCandidates(store, { offeringIds: ["off_a"], expiredBefore: Date.now(), limit: 10 });
      expect(after.map((candidate) => candidate.id)).not.toContain(held.id);
    });
  });

  describe("payment record reads", () => {
    let txCounter = 0;
    function transfer(value: bigint, blockNumber: bigint): IndexedTransfer {
      txCounter++;
      return {
        chainId: 31337,
        transactionHash: `0x${(txCounter + 0xabc000).toString(16).padStart(64, "0")}` as Hex,
        logIndex: 0,
        token: USDC as Address,
        from: PAYER as Address,
        to: PAY_TO as Address,
        value,
        blockNumber,
        blockHash: `0x${(txCounter + 0xdef000).toString(16).padStart(64, "0")}` as Hex,
        blockTimestamp: BigInt(Math.floor(Date.now() / 1000) + 1),
        transactionIndex: 0,
      };
    }

    it("a paid RWA purchase leaves the unpaid holds and joins the holder register, its order's offering and the sold-out totals", async () => {
      const created = await store.transaction().execute((trx) =>
        createSessionInTransaction(
          trx,
          { networks: [network] },
          {
            partnerId: "ptr_a",
            kind: "rwa",
            externalOrderId: "pur_paid",
            externalProductId: "off_a",
            productName: "Bond A",
            productCategory: "rwa",
            quantity: 3,
            totalPriceUsdc: 3_000_000n,
            shippingRequired: false,
            certificateEnabled: false,
          },
        ),
      );
      const bought: Purchase = {
        id: "pur_paid",
        offeringId: "off_a",
        investor: INVESTOR,
        recipient: INVESTOR,
        units: 3,
        unitPriceUsdc: 1_000_000n,
        totalPriceUsdc: 3_000_000n,
        network: "local",
        chainId: 31337,
        sessionId: created.session.id,
        expiresAt: created.session.expiresAt,
        releasedAt: null,
        createdAt: Date.now(),
      };
      await store.transaction().execute((trx) => insertPurchase(trx, bought));
      const heldBefore = await unpaidUnitsOfUnverified(store, "off_a");
      expect(await settledPurchasesOfOffering(store, "off_a")).toEqual([]);

      const paid = transfer(created.session.amountDue, 400n);
      expect((await recordTransfer(store, { transfer: paid, network, head: 410n })).status).toBe("settled");

      expect(await unpaidUnitsOfUnverified(store, "off_a")).toBe(heldBefore - 3);
      expect(await settledPurchasesOfOffering(store, "off_a")).toEqual([bought]);
      expect(await offeringsOfOrders(store, [created.orderId])).toEqual([
        { orderId: created.orderId, offeringId: "off_a", offeringName: "Bond A", issuerName: "Issuer A" },
      ]);
      expect(await settledUnitsOfExhaustedOfferings(store, ["off_a"])).toEqual([]);
      await store.updateTable("offering").set({ units_available: 0 }).where("id", "=", "off_a").execute();
      expect(await settledUnitsOfExhaustedOfferings(store, ["off_a"])).toEqual([
        { offeringId: "off_a", totalUnits: 100, settledUnits: 3 },
      ]);
    });

    it("a settled payment is read as Payment, found by its hash in any case, and reorged through its domain key", async () => {
      const created = await store.transaction().execute((trx) =>
        createSessionInTransaction(
          trx,
          { networks: [network] },
          {
            partnerId: "ptr_a",
            kind: "commerce",
            externalOrderId: "order-portal-records",
            externalProductId: "sku",
            productName: "Tee",
            productCategory: "apparel",
            quantity: 1,
            totalPriceUsdc: 7_000_000n,
            shippingRequired: false,
            certificateEnabled: false,
          },
        ),
      );
      const paid = transfer(created.session.amountDue, 300n);
      expect((await recordTransfer(store, { transfer: paid, network, head: 310n })).status).toBe("settled");

      const [payment] = await payingPaymentsOfSessions(store, [created.session.id]);
      expect(payment).toMatchObject({
        sessionId: created.session.id,
        status: "settled",
        amount: created.session.amountDue,
        from: getAddress(PAYER),
        to: getAddress(PAY_TO),
        blockNumber: 300n,
        minedAt: Number(paid.blockTimestamp) * 1000,
      });

      const upper = `0x${paid.transactionHash.slice(2).toUpperCase()}` as Hex;
      expect(await purchaseIdsPaidBy(store, upper)).toEqual([created.purchaseId]);

      expect((await reorgedPayments(store)).count).toBe(0);
      const moved = await store
        .transaction()
        .execute((trx) => movePayment(trx, { payment: payment!, transition: "reorg", now: Date.now() }));
      expect(moved).toBe(true);
      const reorged = await reorgedPayments(store);
      expect(reorged.count).toBe(1);
      expect(reorged.last).toMatchObject({ status: "reorged", transactionHash: paid.transactionHash, orderId: created.orderId });
      // A settled payment no longer: it stops showing as the session's settlement.
      expect(await payingPaymentsOfSessions(store, [created.session.id])).toEqual([]);
    });
  });
});
