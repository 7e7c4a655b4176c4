import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RelayLimits } from "../../api/config/option-types.js";
import {
  assertRelayAllowed,
  assertRelayedAmount,
  recordRelayCharge,
  relaySpendByPartner,
  settleRelayCharge,
} from "../../api/gasless/relay-charges.js";
import type { Store } from "../../api/store/open-store.js";
import { unitStore } from "../support/unit-store.js";

// Issue 24, finding 3: the relayer's limits on a real store (the full stack drives
// them in test/relayer-limits.test.ts; the budget's arithmetic is checked here).
const limits: RelayLimits = {
  minAmount: 100_000n,
  partnerDailyRelays: 100,
  sessionRelays: 2,
  partnerDailyGasWei: 1_000_000n,
  balanceFloorWei: 0n,
};
const NOON = Date.UTC(2026, 10, 26, 12, 0, 0);
let store: Store;
let close: () => Promise<void>;
beforeAll(async () => ({ store, close } = await unitStore()));
afterAll(() => close());

const charge = (partnerId: string, subjectId: string | null) => ({
  partnerId,
  chainId: 31337,
  purpose: "payment" as const,
  subjectId,
});
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: { code: string; status: number; extensions: Record<string, unknown> }) => error,
  );

describe("the relayer's limits", () => {
  it("refuses an amount under the minimum", () => {
    expect(() => assertRelayedAmount(limits, 99_999n)).toThrow(
      expect.objectContaining({ code: "relay_amount_too_small", status: 422 }),
    );
    expect(() => assertRelayedAmount(limits, 100_000n)).not.toThrow();
  });

  it("spends a partner's daily gas budget, counting in-flight transactions at their maximum and mined ones at their cost, then refuses until the next UTC day", async () => {
    await recordRelayCharge(store, { ...charge("ptr_a", "cs_1"), transactionHash: "0xaa01", reservedWei: 600_000n, now: NOON });
    // In flight: 600,000 of 1,000,000 counted; a call that may cost 500,000 more is refused.
    const refused = await refusal(
      assertRelayAllowed(store, limits, { ...charge("ptr_a", "cs_2"), estimatedCostWei: 500_000n, now: NOON }),
    );
    expect(refused).toMatchObject({ code: "relay_budget_spent", status: 429 });
    expect(refused?.extensions.retryAfterSeconds).toBe(12 * 3600);
    // Mined for 300,000: the same call now fits.
    await settleRelayCharge(store, { transactionHashes: ["0xAA01"], gasCostWei: 300_000n });
    await assertRelayAllowed(store, limits, { ...charge("ptr_a", "cs_2"), estimatedCostWei: 500_000n, now: NOON });
    await recordRelayCharge(store, { ...charge("ptr_a", "cs_2"), transactionHash: "0xaa02", reservedWei: 700_000n, now: NOON });
    expect(await refusal(assertRelayAllowed(store, limits, { ...charge("ptr_a", "cs_3"), now: NOON }))).toMatchObject({
      code: "relay_budget_spent",
    });
    // Another partner, and the same partner tomorrow, are not affected.
    await assertRelayAllowed(store, limits, { ...charge("ptr_b", "cs_9"), estimatedCostWei: 900_000n, now: NOON });
    await assertRelayAllowed(store, limits, {
      ...charge("ptr_a", "cs_3"),
      estimatedCostWei: 900_000n,
      now: NOON + 12 * 3600_000,
    });
    const spend = await relaySpendByPartner(store, limits, { now: NOON });
    expect(spend.partners).toEqual([{ partnerId: "ptr_a", chainId: 31337, relays: 2, spentWei: 1_000_000n, remainingWei: 0n }]);
  });

  it("counts a session's relays and a partner's relays per day", async () => {
    const few = { ...limits, partnerDailyRelays: 3, partnerDailyGasWei: 10n ** 18n };
    const day = NOON + 2 * 24 * 3600_000;
    await recordRelayCharge(store, { ...charge("ptr_c", "cs_c1"), transactionHash: "0xcc01", reservedWei: 1n, now: day });
    await recordRelayCharge(store, { ...charge("ptr_c", "cs_c1"), transactionHash: "0xcc02", reservedWei: 1n, now: day });
    expect(await refusal(assertRelayAllowed(store, few, { ...charge("ptr_c", "cs_c1"), now: day }))).toMatchObject({
      code: "relay_session_limit",
      status: 409,
    });
    await recordRelayCharge(store, { ...charge("ptr_c", "cs_c2"), transactionHash: "0xcc03", reservedWei: 1n, now: day });
    const quota = await refusal(assertRelayAllowed(store, few, { ...charge("ptr_c", "cs_c3"), now: day }));
    expect(quota).toMatchObject({ code: "relay_quota_exceeded", status: 429 });
    expect(quota?.extensions.retryAfterSeconds).toBe(12 * 3600);
  });
});
