import { describe, expect, it } from "vitest";
import { entryChanges, type KeptEntry } from "../../api/accounting/closed-periods.js";
import { csvCell, csvLine, usdcDecimal } from "../../api/accounting/csv-export.js";
import {
  classifyIncoming,
  classifyOutgoing,
  emptySums,
  fundingClaimEntry,
  ledgerEntriesOf,
  PAYMENTS_OF_OWN_KIND,
  SUM_KINDS,
  signedValue,
} from "../../api/accounting/ledger-rules.js";
import { firstBlockAtOrAfter, MAX_RANGE_BLOCKS, parseRange } from "../../api/accounting/range.js";
import type { IndexedTransfer } from "../../api/indexed/indexed-chain.js";

const A = "0x00000000000000000000000000000000000000aa" as const;
const B = "0x00000000000000000000000000000000000000bb" as const;
const C = "0x00000000000000000000000000000000000000cc" as const;

const transfer = (from: `0x${string}`, to: `0x${string}`, value = 5n): IndexedTransfer => ({
  chainId: 31337,
  transactionHash: `0x${"1".repeat(64)}`,
  logIndex: 3,
  token: C,
  from,
  to,
  value,
  blockNumber: 10n,
  blockHash: `0x${"2".repeat(64)}`,
  blockTimestamp: 1000n,
  transactionIndex: 0,
});

const problemCode = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
};

describe("ledger classification", () => {
  it("names every incoming payment state", () => {
    expect(classifyIncoming(undefined)).toEqual({ kind: "unmatched_in", reason: "not_yet_processed" });
    expect(classifyIncoming({ status: "settled", reason: null, orderId: "ord_1" })).toEqual({
      kind: "settled",
      orderId: "ord_1",
    });
    expect(classifyIncoming({ status: "attached", reason: "underpaid", orderId: "ord_1" })).toEqual({
      kind: "settled",
      orderId: "ord_1",
    });
    for (const reason of ["underpaid", "overpaid", "late"])
      expect(classifyIncoming({ status: "unresolved", reason, orderId: "ord_2" })).toEqual({
        kind: reason,
        reason,
        orderId: "ord_2",
      });
    expect(classifyIncoming({ status: "unresolved", reason: "wrong_payer", orderId: null })).toEqual({
      kind: "unmatched_in",
      reason: "wrong_payer",
    });
    expect(classifyIncoming({ status: "settled", reason: null, resolution: "subscription_charge", orderId: "ord_3" })).toEqual({
      kind: "subscription_charge",
      orderId: "ord_3",
    });
    expect(classifyIncoming({ status: "pending", reason: null, orderId: null }).reason).toBe("awaiting_confirmations");
    expect(classifyIncoming({ status: "reorged", reason: null, orderId: null }).reason).toBe("reorged");
  });

  it("names exactly the payments whose kind is not unmatched_in, which the reconciliation reads one by one", () => {
    const statuses = ["pending", "settled", "unresolved", "refund_requested", "attached", "reorged"] as const;
    const reasons = [null, "unmatched", "underpaid", "overpaid", "late", "wrong_payer", "duplicate_payment", "predates_session"];
    for (const status of statuses)
      for (const reason of reasons) {
        const own = classifyIncoming({ status, reason, orderId: null }).kind !== "unmatched_in";
        const selected =
          PAYMENTS_OF_OWN_KIND.statuses.includes(status) ||
          (PAYMENTS_OF_OWN_KIND.reasonedStatuses.includes(status) &&
            reason !== null &&
            PAYMENTS_OF_OWN_KIND.reasons.includes(reason));
        expect(selected, `${status} ${reason}`).toBe(own);
      }
  });

  it("tells a reward claim and a refund from the partner's own outgoing move", () => {
    const t = transfer(A, B, 7n);
    expect(classifyOutgoing(t, {})).toEqual({ kind: "unmatched_out" });
    expect(classifyOutgoing(t, { outgoing: { status: "unmatched", refundId: null } })).toEqual({ kind: "unmatched_out" });
    expect(classifyOutgoing(t, { outgoing: { status: "matched", refundId: "rf_1" } })).toEqual({
      kind: "refund",
      refundId: "rf_1",
    });
    expect(classifyOutgoing(t, { rewardClaims: [{ rewardId: "rw_1", funder: A, recipient: B, amount: 7n }] })).toEqual({
      kind: "reward_claim",
      rewardId: "rw_1",
    });
    // The accountant's columns: a refund names its order and reason code, a claim its order.
    expect(
      classifyOutgoing(t, {
        outgoing: { status: "matched", refundId: "rf_1", refund: { orderId: "ord_1", reason: "duplicate" } },
      }),
    ).toEqual({ kind: "refund", refundId: "rf_1", orderId: "ord_1", reason: "duplicate" });
    expect(
      classifyOutgoing(t, {
        outgoing: { status: "matched", refundId: "rf_2", refund: { orderId: null, reason: "wrong_amount" } },
      }),
    ).toEqual({ kind: "refund", refundId: "rf_2", reason: "wrong_amount" });
    expect(
      classifyOutgoing(t, { rewardClaims: [{ rewardId: "rw_1", orderId: "ord_9", funder: A, recipient: B, amount: 7n }] }),
    ).toEqual({ kind: "reward_claim", rewardId: "rw_1", orderId: "ord_9" });
    // A claim of another amount in the same transaction is not this transfer.
    expect(classifyOutgoing(t, { rewardClaims: [{ rewardId: "rw_1", funder: A, recipient: B, amount: 8n }] }).kind).toBe(
      "unmatched_out",
    );
  });

  it("lists a claim from a funding-only address under it: reward_claim when the voucher named that funder, else money out", () => {
    const claim = {
      chainId: 31337,
      contract: C,
      rewardId: `0x${"ab".repeat(32)}` as const,
      funder: A,
      recipient: B,
      token: C,
      amount: 9n,
      transactionHash: `0x${"2".repeat(64)}` as const,
      logIndex: 4,
      blockNumber: 12n,
      blockHash: `0x${"3".repeat(64)}` as const,
      blockTimestamp: 1_700_000_000n,
    };
    const entry = fundingClaimEntry(claim, { id: "rw_1", orderId: "ord_1", funder: A.toUpperCase().replace("0X", "0x") });
    expect(entry).toMatchObject({ kind: "reward_claim", rewardId: "rw_1", orderId: "ord_1", paymentAddress: A, leg: 0 });
    expect(signedValue(entry)).toBe(-9n);
    expect(fundingClaimEntry(claim, undefined)).toMatchObject({ kind: "unmatched_out", paymentAddress: A, value: 9n });
    expect(fundingClaimEntry(claim, { id: "rw_2", orderId: "ord_2", funder: B }).kind).toBe("unmatched_out");
  });

  it("gives a move between two watched addresses both legs, out first, and balances them", () => {
    const entries = ledgerEntriesOf(transfer(A, B), {}, new Set([A, B]));
    expect(entries.map((entry) => [entry.leg, entry.kind, entry.paymentAddress])).toEqual([
      [0, "unmatched_out", A],
      [1, "unmatched_in", B],
    ]);
    expect(entries.reduce((sum, entry) => sum + signedValue(entry), 0n)).toBe(0n);
    expect(ledgerEntriesOf(transfer(C, A), {}, new Set([A]))).toHaveLength(1);
  });

  // Issue 40: a 0-USDC transfer moves nothing, whatever payment a store recorded for it before.
  it("calls a zero-value transfer zero_value on both legs, even with a payment recorded for it", () => {
    const payment = { status: "unresolved" as const, reason: "unmatched", orderId: null };
    const entries = ledgerEntriesOf(transfer(A, B, 0n), { payment }, new Set([A, B]));
    expect(entries.map((entry) => [entry.leg, entry.kind])).toEqual([
      [0, "zero_value"],
      [1, "zero_value"],
    ]);
    expect(SUM_KINDS).not.toContain("zero_value");
    expect(Object.keys(emptySums())).toEqual([...SUM_KINDS]);
  });
});

describe("ranges", () => {
  it("accepts blocks or times and refuses the rest with stable codes", () => {
    expect(parseRange({ fromBlock: "5", toBlock: "9" })).toMatchObject({ basis: "blocks", fromBlock: 5n, toBlock: 9n });
    expect(parseRange({ from: "2026-01-01", to: "2026-02-01T00:00:00Z" })).toMatchObject({
      basis: "times",
      fromTime: Date.UTC(2026, 0, 1),
      toTime: Date.UTC(2026, 1, 1),
    });
    expect(problemCode(() => parseRange({}))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ fromBlock: "9", toBlock: "5" }))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ fromBlock: "abc", toBlock: "5" }))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ fromBlock: "1e3", toBlock: "5000" }))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ fromBlock: "1", to: "2026-01-01" }))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ from: "yesterday", to: "2026-01-01" }))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ from: "2026-02-01", to: "2026-01-01" }))).toBe("invalid_range");
    expect(problemCode(() => parseRange({ fromBlock: "0", toBlock: String(MAX_RANGE_BLOCKS) }))).toBe("range_too_wide");
    expect(parseRange({ fromBlock: "0", toBlock: String(MAX_RANGE_BLOCKS - 1n) }).basis).toBe("blocks");
    expect(problemCode(() => parseRange({ from: "2025-01-01", to: "2026-01-03" }))).toBe("range_too_wide");
  });

  it("finds the first block at or after a time by binary search over block timestamps", async () => {
    const stamps = [100n, 100n, 102n, 105n, 105n, 110n];
    const clock = async (block: bigint) => stamps[Number(block)] as bigint;
    expect(await firstBlockAtOrAfter(clock, 100n, 0n, 5n)).toBe(0n);
    expect(await firstBlockAtOrAfter(clock, 101n, 0n, 5n)).toBe(2n);
    expect(await firstBlockAtOrAfter(clock, 105n, 0n, 5n)).toBe(3n);
    expect(await firstBlockAtOrAfter(clock, 111n, 0n, 5n)).toBe(6n);
  });
});

describe("CSV", () => {
  it("neutralises formulas, quotes per RFC 4180 and leaves signed numbers alone", () => {
    for (const text of ["=1+1", "+1", "-x", "@SUM(A1)", "\tcmd", "\rcmd"]) expect(csvCell(text).replace(/^"/, "")[0]).toBe("'");
    expect(csvCell("-100")).toBe("-100");
    expect(csvCell("-1.500000")).toBe("-1.500000");
    expect(csvCell("-1.5e3")).toBe("'-1.5e3");
    expect(csvCell('a "b", c')).toBe('"a ""b"", c"');
    expect(csvLine(["a", 1n, null, true])).toBe("a,1,,true\r\n");
  });
});

describe("decimal USDC twins (SPEC 17.1)", () => {
  it("moves the point six digits, exactly, with a sign for negatives and nothing for an empty cell", () => {
    expect(usdcDecimal(25_000_000n)).toBe("25.000000");
    expect(usdcDecimal("25000000")).toBe("25.000000");
    expect(usdcDecimal(0n)).toBe("0.000000");
    expect(usdcDecimal(1n)).toBe("0.000001");
    expect(usdcDecimal(999_999n)).toBe("0.999999");
    expect(usdcDecimal(-1_500_000n)).toBe("-1.500000");
    expect(usdcDecimal(-1n)).toBe("-0.000001");
    // Beyond a double's 53 bits: no rounding.
    expect(usdcDecimal(123_456_789_012_345_678_901n)).toBe("123456789012345.678901");
    expect(usdcDecimal(1_234_567_890_123n)).not.toContain(",");
    expect(usdcDecimal(null)).toBeUndefined();
    expect(usdcDecimal(undefined)).toBeUndefined();
    expect(usdcDecimal("")).toBeUndefined();
  });
});

describe("closed periods: what changed since closing", () => {
  const entry = (tx: string, kind: string, value: string, blockHash: string, leg: 0 | 1 = 1): KeptEntry => [
    `0x${tx.repeat(64)}`,
    1,
    A,
    kind,
    value,
    `0x${blockHash.repeat(64)}`,
    leg,
  ];

  it("names each later fact once: added, removed (opposite effect), moved to another block, reclassified", () => {
    const kept = [
      entry("1", "unmatched_in", "5", "a"),
      entry("2", "settled", "7", "a"),
      entry("3", "unmatched_in", "9", "a"),
      entry("4", "unmatched_out", "2", "a", 0),
    ];
    const current = [
      entry("1", "unmatched_in", "5", "a"),
      entry("2", "settled", "7", "b"),
      entry("3", "settled", "9", "a"),
      entry("5", "unmatched_out", "4", "c", 0),
    ];
    expect(entryChanges(kept, current).map(({ change, entry, effect }) => [change, entry[0].slice(2, 3), effect])).toEqual([
      ["moved", "2", 0n],
      ["reclassified", "3", 0n],
      ["added", "5", -4n],
      ["removed", "4", 2n],
    ]);
    expect(entryChanges(kept, kept)).toEqual([]);
  });
});
