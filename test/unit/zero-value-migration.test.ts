import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { insertPayment, type Payment } from "../../api/payments/payment-record.js";
import { up } from "../../api/store/migrations/0019_zero_value_movements.js";
import type { Store } from "../../api/store/open-store.js";
import { unitStore } from "../support/unit-store.js";

// Issue 40: the zero-value "payments" recorded before the fix leave the unresolved queue; nothing else does.
let store: Store;
let close: () => Promise<void>;
beforeEach(async () => {
  ({ store, close } = await unitStore());
});
afterEach(async () => close());

const payment = (logIndex: number, overrides: Partial<Payment>): Payment => ({
  chainId: 31337,
  transactionHash: `0x${"ab".repeat(32)}`,
  logIndex,
  partnerId: null,
  sessionId: null,
  status: "unresolved",
  reason: "unmatched",
  from: "0x00000000000000000000000000000000000000Aa",
  to: "0x00000000000000000000000000000000000000bB",
  amount: 0n,
  blockNumber: 5n,
  blockHash: `0x${"cd".repeat(32)}`,
  minedAt: 1_000,
  resolution: null,
  createdAt: 1_000,
  updatedAt: 1_000,
  ...overrides,
});

describe("migration 0019_zero_value_movements", () => {
  it("deletes only unresolved, unmatched, unlinked payments of 0", async () => {
    await insertPayment(store, payment(0, {}));
    await insertPayment(store, payment(1, { amount: 1n }));
    await insertPayment(store, payment(2, { status: "refund_requested" }));
    await insertPayment(store, payment(3, { reason: "late" }));
    await up(store as unknown as Parameters<typeof up>[0]);
    const left = await store.selectFrom("payment").select("log_index").orderBy("log_index").execute();
    expect(left.map((row) => row.log_index)).toEqual([1, 2, 3]);
  });
});
