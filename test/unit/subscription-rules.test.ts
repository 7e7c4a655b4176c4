import { describe, expect, it } from "vitest";
import {
  currentPeriodIndex,
  nextChargeAt,
  nextRetryAt,
  pendingChargeVerdict,
  periodOf,
  permitValueOf,
  shortfallOf,
} from "../../api/subscriptions/subscription-rules.js";
import { OPEN_ENDED } from "../../api/subscriptions/subscription-terms.js";

const DAY = 86_400;

describe("subscription rules", () => {
  it("a month is 30 days on chain, a year 365, a custom interval its seconds", () => {
    expect(periodOf("day")).toEqual({ interval: "day", periodSeconds: DAY });
    expect(periodOf("week").periodSeconds).toBe(7 * DAY);
    expect(periodOf("month").periodSeconds).toBe(30 * DAY);
    expect(periodOf("year").periodSeconds).toBe(365 * DAY);
    expect(periodOf({ seconds: 3_600 })).toEqual({ interval: "custom", periodSeconds: 3_600 });
  });

  it("the due period is the contract's (now - start) / period, only inside [start, end)", () => {
    const terms = { start: 1_000, period: DAY, end: 1_000 + 3 * DAY };
    expect(currentPeriodIndex(terms, 999)).toBeUndefined();
    expect(currentPeriodIndex(terms, 1_000)).toBe(0n);
    expect(currentPeriodIndex(terms, 1_000 + DAY - 1)).toBe(0n);
    expect(currentPeriodIndex(terms, 1_000 + DAY)).toBe(1n);
    expect(currentPeriodIndex(terms, 1_000 + 3 * DAY - 1)).toBe(2n);
    expect(currentPeriodIndex(terms, 1_000 + 3 * DAY)).toBeUndefined();
    expect(nextChargeAt(terms, 1_000 + 10)).toBe(1_000 + DAY);
    expect(nextChargeAt(terms, 1_000 + 2 * DAY)).toBeUndefined();
  });

  it("retries after 1 h, 6 h, 24 h and 72 h, then none", () => {
    expect([1, 2, 3, 4, 5].map((attempts) => nextRetryAt(0, attempts))).toEqual([3_600, 21_600, 86_400, 259_200, null]);
  });

  it("the permit covers the periods until end, at most 12", () => {
    expect(permitValueOf({ amount: 5n, period: DAY, start: 0, end: OPEN_ENDED })).toBe(60n);
    expect(permitValueOf({ amount: 5n, period: DAY, start: 0, end: 3 * DAY })).toBe(15n);
    // A partial last period is still chargeable.
    expect(permitValueOf({ amount: 5n, period: DAY, start: 0, end: 2 * DAY + 1 })).toBe(15n);
  });

  it("a shortfall of balance is told before one of allowance", () => {
    expect(shortfallOf({ amount: 10n, balance: 9n, allowance: 0n })).toBe("insufficient_balance");
    expect(shortfallOf({ amount: 10n, balance: 10n, allowance: 9n })).toBe("insufficient_allowance");
    expect(shortfallOf({ amount: 10n, balance: 10n, allowance: 10n })).toBeUndefined();
  });

  it("a pending charge the index does not hold: reverted fails, gone from the chain is due again, anything else waits", () => {
    expect(pendingChargeVerdict({ receipt: "reverted", inPool: undefined })).toBe("reverted");
    expect(pendingChargeVerdict({ receipt: null, inPool: false })).toBe("reopen");
    // Still in the pool, mined (the index will show it), or the node silent: nothing is known to change.
    expect(pendingChargeVerdict({ receipt: null, inPool: true })).toBe("wait");
    expect(pendingChargeVerdict({ receipt: "success", inPool: undefined })).toBe("wait");
    expect(pendingChargeVerdict({ receipt: undefined, inPool: undefined })).toBe("wait");
    expect(pendingChargeVerdict({ receipt: null, inPool: undefined })).toBe("wait");
  });
});
