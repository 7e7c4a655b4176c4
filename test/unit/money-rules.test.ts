import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_OFFSET, MIN_OFFSET, reserveAmount } from "../../api/checkout/amount-reference.js";
import { requestHash } from "../../api/checkout/idempotency.js";
import { confirmationsOf, isConfirmed, shownConfirmations } from "../../api/indexed/confirmations.js";
import { BLOCK_CLOCK_TOLERANCE_MS, judgeTransfer, type TransferFacts } from "../../api/settlement/record-transfer.js";
import { rejectionFor, rejectionForRecorded } from "../../api/settlement/submit-transaction-hash.js";
import { migrateStore, openSqliteStore, type Store } from "../../api/store/open-store.js";

/** The pure rules of settlement and checkout, and the reference reservation on a real SQLite store. */

describe("confirmations", () => {
  it("counts the transfer's own block as the first, and none while the head lags", () => {
    expect(confirmationsOf({ blockNumber: 10n }, 10n)).toBe(1);
    expect(confirmationsOf({ blockNumber: 10n }, 12n)).toBe(3);
    expect(confirmationsOf({ blockNumber: 10n }, 9n)).toBe(0);
    expect(isConfirmed({ blockNumber: 10n }, 11n, 3)).toBe(false);
    expect(isConfirmed({ blockNumber: 10n }, 12n, 3)).toBe(true);
  });

  it("shows at least one confirmation for a recorded transfer, even with a lagging or unknown head", () => {
    expect(shownConfirmations({ blockNumber: 10n }, 9n)).toBe(1);
    expect(shownConfirmations({ blockNumber: 10n }, undefined)).toBe(1);
    expect(shownConfirmations({ blockNumber: 10n }, 14n)).toBe(5);
  });
});

describe("which session a transfer pays (judgeTransfer)", () => {
  // As the index stores them (lower case); a session's required payer is EIP-55.
  const PAYER = "0x8ba1f109551bd432803012645ac136ddd64dba72";
  const OTHER = "0x00000000000000000000000000000000000000cc";
  const createdAt = Date.UTC(2026, 10, 23, 12, 0, 0, 400);
  const base: TransferFacts = {
    minedAt: createdAt + 60_000,
    from: PAYER,
    referenceReleasedAt: createdAt + 10 * 3_600_000,
    session: { requiredPayer: null, createdAt, expiresAt: createdAt + 1_800_000, lateUntil: createdAt + 7 * 86_400_000 },
    orderTaken: false,
  };
  const judge = (change: Partial<TransferFacts>, session: Partial<TransferFacts["session"]> = {}) =>
    judgeTransfer({ ...base, ...change, session: { ...base.session, ...session } });

  it("matches the exact amount mined in the session's lifetime", () => {
    expect(judge({})).toEqual({ kind: "match" });
  });

  it("a block stamped up to five seconds before the second the session was created in pays it (the chain's clock, a slot's start)", () => {
    expect(judge({ minedAt: createdAt - 400 })).toEqual({ kind: "match" });
    expect(judge({ minedAt: createdAt - 400 - BLOCK_CLOCK_TOLERANCE_MS })).toEqual({ kind: "match" });
    expect(judge({ minedAt: createdAt - 401 - BLOCK_CLOCK_TOLERANCE_MS })).toEqual({
      kind: "unresolved",
      reason: "predates_session",
      linked: true,
    });
  });

  it("names each reason, and links the payment to the session only while its amount still names it", () => {
    expect(judge({ minedAt: base.session.expiresAt + 1 })).toEqual({ kind: "unresolved", reason: "late", linked: true });
    expect(judge({ minedAt: base.session.lateUntil + 1, referenceReleasedAt: base.session.lateUntil + 10 })).toEqual({
      kind: "unresolved",
      reason: "late",
      linked: false,
    });
    expect(judge({ referenceReleasedAt: base.minedAt - 1 })).toEqual({ kind: "unresolved", reason: "unmatched", linked: false });
    expect(judge({}, { requiredPayer: OTHER })).toEqual({ kind: "unresolved", reason: "wrong_payer", linked: true });
    expect(judge({ from: OTHER }, { requiredPayer: OTHER })).toEqual({ kind: "match" });
    expect(judge({ orderTaken: true })).toEqual({ kind: "unresolved", reason: "duplicate_payment", linked: true });
  });

  it("checks the payer before time, and time before the order (the first failing rule is the reason)", () => {
    expect(judge({ minedAt: base.session.expiresAt + 1, orderTaken: true }, { requiredPayer: OTHER })).toMatchObject({
      reason: "wrong_payer",
    });
    expect(judge({ minedAt: base.session.expiresAt + 1, orderTaken: true })).toMatchObject({ reason: "late" });
  });

  it("compares the payer with the required one whatever their case (the index keeps lower case, the session EIP-55)", () => {
    const checksummed = getAddress(PAYER);
    expect(checksummed).not.toBe(PAYER);
    expect(judge({}, { requiredPayer: checksummed })).toEqual({ kind: "match" });
    expect(judge({ from: checksummed }, { requiredPayer: PAYER })).toEqual({ kind: "match" });
    expect(judge({}, { requiredPayer: getAddress(OTHER) })).toMatchObject({ reason: "wrong_payer" });
  });
});

describe("rejection reasons of a submitted hash", () => {
  const session = { id: "cs_1" };
  const other = { id: "cs_2" };

  it("a transfer that names another session is a replay, whatever the reason", () => {
    expect(rejectionFor("wrong_payer", other, session)).toBe("replay");
    expect(rejectionFor("duplicate_payment", other, session)).toBe("replay");
  });

  it("keeps the customer-facing reasons and folds the rest into wrong_amount", () => {
    expect(rejectionFor("late", undefined, session)).toBe("late");
    expect(rejectionFor("late", session, session)).toBe("late");
    expect(rejectionFor("wrong_payer", session, session)).toBe("wrong_payer");
    expect(rejectionFor("predates_session", session, session)).toBe("predates_session");
    expect(rejectionFor("duplicate_payment", session, session)).toBe("duplicate_payment");
    expect(rejectionFor("unmatched", undefined, session)).toBe("wrong_amount");
  });

  it("a recorded payment that does not pay this session says why, or is a replay", () => {
    expect(rejectionForRecorded({ reason: "duplicate_payment" })).toBe("duplicate_payment");
    expect(rejectionForRecorded({ reason: "late" })).toBe("late");
    expect(rejectionForRecorded({ reason: "underpaid" })).toBe("replay");
    expect(rejectionForRecorded({ reason: null })).toBe("replay");
  });
});

describe("request hashing for idempotency", () => {
  it("is the same for the same body in any key order, nested too", () => {
    expect(requestHash({ a: 1, b: { c: [1, { d: 2, e: 3 }] } })).toBe(requestHash({ b: { c: [1, { e: 3, d: 2 }] }, a: 1 }));
  });

  it("differs for any other value, array order or type", () => {
    const hash = requestHash({ total: "25000000", items: [1, 2] });
    expect(requestHash({ total: "25000001", items: [1, 2] })).not.toBe(hash);
    expect(requestHash({ total: "25000000", items: [2, 1] })).not.toBe(hash);
    expect(requestHash({ total: 25000000, items: [1, 2] })).not.toBe(hash);
    expect(requestHash({ total: "25000000", items: [1, 2], extra: null })).not.toBe(hash);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("payment reference reservation", () => {
  let dir: string;
  let store: Store;
  const ADDRESS = "0x00000000000000000000000000000000000000aa";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "money-rules-"));
    store = openSqliteStore(join(dir, "app.sqlite"));
    await migrateStore(store);
  });
  afterAll(async () => {
    await store?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const reserve = (sessionId: string, total: bigint, releasedAt: number, now: number) =>
    store
      .transaction()
      .execute((trx) => reserveAmount(trx, { chainId: 1, paymentAddresses: [ADDRESS], total, sessionId, releasedAt, now }));

  it("adds a sub-cent offset, never the same one twice for one total on one address", async () => {
    const now = Date.now();
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const reserved = await reserve(`cs_${i}`, 5_000_000n, now + 3_600_000, now);
      expect(reserved.offset).toBeGreaterThanOrEqual(MIN_OFFSET);
      expect(reserved.offset).toBeLessThanOrEqual(MAX_OFFSET);
      expect(reserved.amountDue).toBe(5_000_000n + BigInt(reserved.offset));
      expect(seen.has(reserved.offset)).toBe(false);
      seen.add(reserved.offset);
    }
  });

  it("when every offset is held, takes over the one released longest ago, and refuses when none is released", async () => {
    const now = Date.now();
    const total = 7_000_000n;
    // Fill the whole space: offsets held until later, except two released in the past.
    const rows = [];
    for (let offset = MIN_OFFSET; offset <= MAX_OFFSET; offset++) {
      const releasedAt = offset === 42 ? now - 10_000 : offset === 43 ? now - 5_000 : now + 3_600_000;
      rows.push({
        chain_id: 1,
        payment_address: ADDRESS,
        amount_due: (total + BigInt(offset)).toString(),
        total_price_usdc: total.toString(),
        session_id: `cs_fill_${offset}`,
        released_at: releasedAt,
      });
    }
    for (let i = 0; i < rows.length; i += 500)
      await store
        .insertInto("amount_reservation")
        .values(rows.slice(i, i + 500))
        .execute();

    const first = await reserve("cs_take_1", total, now + 3_600_000, now);
    expect(first.offset).toBe(42);
    const second = await reserve("cs_take_2", total, now + 3_600_000, now);
    expect(second.offset).toBe(43);
    await expect(reserve("cs_take_3", total, now + 3_600_000, now)).rejects.toMatchObject({
      code: "reference_space_exhausted",
    });
  });
});
