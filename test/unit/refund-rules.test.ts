import { type Address, zeroAddress } from "viem";
import { describe, expect, it } from "vitest";
import { refundTransitions } from "../../api/refunds/refund-record.js";
import {
  type OutgoingFacts,
  type ReadyRefund,
  reasonForUnresolved,
  refundForTransfer,
  refundTotals,
  refusedDestination,
  remainingRefundable,
  transferMatchesRefund,
} from "../../api/refunds/refund-rules.js";
import { allows, edges } from "../../api/store/transition-table.js";

const TOKEN = "0x00000000000000000000000000000000000000cc" as Address;
const CUSTOMER = "0x00000000000000000000000000000000000000bb" as Address;
const OTHER = "0x00000000000000000000000000000000000000dd" as Address;
const FROM = "0x00000000000000000000000000000000000000aa" as Address;
const RELAYER = "0x00000000000000000000000000000000000000ee" as Address;
const DISTRIBUTOR = "0x00000000000000000000000000000000000000ff" as Address;

const refund = (overrides: Partial<ReadyRefund> = {}): ReadyRefund => ({
  id: "rfd_1",
  partnerId: "ptr_a",
  chainId: 31337,
  token: TOKEN,
  destination: CUSTOMER,
  amount: 5_000_000n,
  readyAt: 1_700_000_000_500,
  readyBlock: 100n,
  createdAt: 1_700_000_000_000,
  ...overrides,
});
const transfer = (overrides: Partial<OutgoingFacts> = {}): OutgoingFacts => ({
  chainId: 31337,
  token: TOKEN,
  from: FROM,
  to: CUSTOMER,
  amount: 5_000_000n,
  blockNumber: 101n,
  minedAt: 1_700_000_010_000,
  partnerId: "ptr_a",
  rewardClaims: [],
  ...overrides,
});

describe("remaining refundable", () => {
  it("is what was paid minus live refunds; cancelled ones do not count; never negative", () => {
    expect(remainingRefundable(10n, [])).toBe(10n);
    expect(
      remainingRefundable(10n, [
        { status: "succeeded", amount: 3n },
        { status: "ready", amount: 2n },
        { status: "cancelled", amount: 5n },
      ]),
    ).toBe(5n);
    expect(remainingRefundable(10n, [{ status: "pending", amount: 12n }])).toBe(0n);
  });
});

describe("refund totals of an order", () => {
  it("counts succeeded as refunded, ready and pending as pending, and is full only at what was paid", () => {
    expect(refundTotals(10n, [])).toEqual({ amountRefunded: 0n, amountRefundPending: 0n, refundStatus: "none" });
    expect(
      refundTotals(10n, [
        { status: "succeeded", amount: 4n },
        { status: "ready", amount: 1n },
        { status: "pending", amount: 2n },
        { status: "awaiting_destination", amount: 3n },
      ]),
    ).toEqual({ amountRefunded: 4n, amountRefundPending: 3n, refundStatus: "partial" });
    expect(
      refundTotals(10n, [
        { status: "succeeded", amount: 4n },
        { status: "succeeded", amount: 6n },
      ]).refundStatus,
    ).toBe("full");
    expect(refundTotals(null, [{ status: "ready", amount: 4n }]).refundStatus).toBe("none");
  });
});

describe("refused destinations", () => {
  const ours = [RELAYER, DISTRIBUTOR];
  it("refuses the zero address, the token and payment addresses, and takes any other", () => {
    expect(refusedDestination({ destination: zeroAddress, token: TOKEN, isPaymentAddress: false, serviceAddresses: ours })).toBe(
      "destination_is_zero_address",
    );
    expect(
      refusedDestination({
        destination: TOKEN.toUpperCase().replace("0X", "0x") as Address,
        token: TOKEN,
        isPaymentAddress: false,
        serviceAddresses: ours,
      }),
    ).toBe("destination_is_token");
    expect(refusedDestination({ destination: FROM, token: TOKEN, isPaymentAddress: true, serviceAddresses: ours })).toBe(
      "destination_is_payment_address",
    );
    expect(
      refusedDestination({ destination: CUSTOMER, token: TOKEN, isPaymentAddress: false, serviceAddresses: ours }),
    ).toBeUndefined();
  });

  it("refuses the service's own addresses (a relayer, its contracts), where money would be stuck (issue 40, finding 8)", () => {
    for (const destination of [RELAYER, DISTRIBUTOR.toUpperCase().replace("0X", "0x") as Address]) {
      expect(refusedDestination({ destination, token: TOKEN, isPaymentAddress: false, serviceAddresses: ours })).toBe(
        "destination_is_service_address",
      );
    }
  });
});

describe("matching an outgoing transfer to a ready refund", () => {
  it("matches the exact amount, to the destination, on the token and chain, from the partner, after ready", () => {
    expect(transferMatchesRefund(transfer(), refund())).toBe(true);
    expect(transferMatchesRefund(transfer({ amount: 4_999_999n }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ amount: 5_000_001n }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ to: OTHER }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ token: OTHER }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ chainId: 8453 }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ partnerId: "ptr_b" }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ partnerId: null }), refund())).toBe(false);
    // Mined in or before the indexed head of when the refund became ready: not its transfer.
    expect(transferMatchesRefund(transfer({ blockNumber: 100n }), refund())).toBe(false);
    expect(transferMatchesRefund(transfer({ blockNumber: 99n }), refund())).toBe(false);
    // A refund ready before its ready block was recorded keeps the time rule (block time counts whole seconds).
    const legacy = refund({ readyBlock: null });
    expect(transferMatchesRefund(transfer({ minedAt: 1_699_999_999_000 }), legacy)).toBe(false);
    expect(transferMatchesRefund(transfer({ minedAt: 1_700_000_000_000 }), legacy)).toBe(true);
    // Addresses in any case.
    expect(transferMatchesRefund(transfer({ to: CUSTOMER.toUpperCase().replace("0X", "0x") as Address }), refund())).toBe(true);
  });

  it("compares in the chain's clock: a later block matches even when its time is behind the service's (issue 40)", () => {
    // The chain's clock 5 s behind the wall clock the refund became ready by.
    expect(transferMatchesRefund(transfer({ blockNumber: 101n, minedAt: 1_699_999_995_000 }), refund())).toBe(true);
  });

  it("a transfer that pays a reward claim of its transaction is that claim, never a refund (issue 40, finding 2)", () => {
    const claim = { funder: FROM, recipient: CUSTOMER, amount: 5_000_000n };
    expect(transferMatchesRefund(transfer({ rewardClaims: [claim] }), refund())).toBe(false);
    expect(refundForTransfer(transfer({ rewardClaims: [claim] }), [refund()])).toBeUndefined();
    // A claim of another funder, recipient or amount in the same transaction explains another transfer.
    for (const other of [{ funder: OTHER }, { recipient: OTHER }, { amount: 4_999_999n }]) {
      expect(transferMatchesRefund(transfer({ rewardClaims: [{ ...claim, ...other }] }), refund())).toBe(true);
    }
  });

  it("serves the oldest ready refund first; the second waits for another transfer", () => {
    const older = refund({ id: "rfd_b", readyAt: 1_700_000_000_100 });
    const newer = refund({ id: "rfd_a", readyAt: 1_700_000_000_900 });
    expect(refundForTransfer(transfer(), [newer, older])?.id).toBe("rfd_b");
    expect(refundForTransfer(transfer(), [newer])?.id).toBe("rfd_a");
    const sameInstant = [refund({ id: "rfd_z", createdAt: 2 }), refund({ id: "rfd_y", createdAt: 1 })];
    expect(refundForTransfer(transfer(), sameInstant)?.id).toBe("rfd_y");
    expect(refundForTransfer(transfer({ amount: 1n }), [older, newer])).toBeUndefined();
  });
});

describe("refund transitions", () => {
  it("go awaiting_destination → ready → pending → succeeded, and cancel only before money moved", () => {
    expect(edges(refundTransitions).map(({ from, to }) => `${from}→${to}`)).toEqual([
      "awaiting_destination→ready",
      "ready→pending",
      "pending→succeeded",
      "pending→ready",
      "succeeded→ready",
      "awaiting_destination→cancelled",
      "ready→cancelled",
    ]);
    expect(allows(refundTransitions, "cancel", "pending")).toBe(false);
    expect(allows(refundTransitions, "cancel", "succeeded")).toBe(false);
    expect(allows(refundTransitions, "set_destination", "ready")).toBe(false);
    expect(allows(refundTransitions, "see_transfer", "cancelled")).toBe(false);
  });

  it("an unresolved payment's refund takes its reason from why the payment was not credited", () => {
    expect(reasonForUnresolved("duplicate_payment")).toBe("duplicate");
    expect(reasonForUnresolved("overpaid")).toBe("wrong_amount");
    expect(reasonForUnresolved("late")).toBe("late");
    expect(reasonForUnresolved("unmatched")).toBe("other");
  });
});
