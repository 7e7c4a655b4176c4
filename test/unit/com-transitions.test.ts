import type { Address, Hex } from "viem";
import { describe, expect, it } from "vitest";
import { certificateTransitions } from "../../api/certificates/certificate-record.js";
import { sessionTransitions } from "../../api/checkout/session-record.js";
import { relayTransitions } from "../../api/gasless/relayed-authorization-record.js";
import { orderTransitions } from "../../api/orders/order-record.js";
import { deliveryTransitions } from "../../api/outbox/deliveries.js";
import { paymentTransitions } from "../../api/payments/payment-record.js";
import { purchaseTransitions } from "../../api/purchases/purchase-record.js";
import { outgoingTransferTransitions } from "../../api/refunds/outgoing-transfer-record.js";
import { refundTransitions } from "../../api/refunds/refund-record.js";
import { type Reward, rewardTransitions } from "../../api/rewards/reward-record.js";
import { ruleFor, TransitionRefused } from "../../api/store/transition-table.js";

/**
 * Every (state, transition) pair of every record's table, against the table written out
 * here by hand from docs/architecture.md (so a changed table fails here until the doc and
 * this expectation agree): a legal pair lands on the documented state, an illegal one is
 * refused with `TransitionRefused` naming the record, the transition and the state.
 */

type Expected = Record<string, { from: string[]; to: string }>;
type Rule = { readonly from: readonly string[]; readonly to: string };
type Record_ = {
  record: string;
  states: string[];
  table: Record<string, Rule>;
  expected: Expected;
  /** How the record module decides: `ruleFor` of api/store/transition-table.ts, the one check every record's mover makes. */
  move: (transition: string, state: string) => string;
};

const viaRuleFor =
  (record: string, table: Record<string, Rule>) =>
  (transition: string, state: string): string =>
    ruleFor(record, table, transition, state).to;

const RECORDS: Record_[] = [
  {
    record: "checkout session",
    states: ["awaiting_payment", "payment_pending", "settled", "expired"],
    table: sessionTransitions,
    expected: {
      pay: { from: ["awaiting_payment", "expired"], to: "payment_pending" },
      settle: { from: ["awaiting_payment", "expired"], to: "settled" },
      confirm: { from: ["payment_pending"], to: "settled" },
      reopen: { from: ["payment_pending"], to: "awaiting_payment" },
      expire: { from: ["awaiting_payment"], to: "expired" },
      attach: { from: ["awaiting_payment", "expired"], to: "settled" },
      reject_duplicate: { from: ["payment_pending", "settled"], to: "expired" },
    },
    move: viaRuleFor("checkout session", sessionTransitions),
  },
  {
    record: "payment",
    states: ["pending", "settled", "unresolved", "refund_requested", "attached", "reorged"],
    table: paymentTransitions,
    expected: {
      confirm: { from: ["pending"], to: "settled" },
      reject_duplicate: { from: ["pending", "settled"], to: "unresolved" },
      attach: { from: ["unresolved"], to: "attached" },
      request_refund: { from: ["unresolved"], to: "refund_requested" },
      link_to_session: { from: ["unresolved"], to: "unresolved" },
      reorg: { from: ["settled", "attached"], to: "reorged" },
      restore_settled: { from: ["reorged"], to: "settled" },
      restore_attached: { from: ["reorged"], to: "attached" },
    },
    move: viaRuleFor("payment", paymentTransitions),
  },
  {
    record: "order",
    states: ["awaiting_payment", "paid", "fulfilled"],
    table: orderTransitions,
    expected: {
      credit: { from: ["awaiting_payment"], to: "paid" },
      fulfil: { from: ["paid"], to: "fulfilled" },
    },
    move: viaRuleFor("order", orderTransitions),
  },
  {
    record: "refund",
    states: ["awaiting_destination", "ready", "pending", "succeeded", "cancelled"],
    table: refundTransitions,
    expected: {
      set_destination: { from: ["awaiting_destination"], to: "ready" },
      see_transfer: { from: ["ready"], to: "pending" },
      succeed: { from: ["pending"], to: "succeeded" },
      reorg: { from: ["pending", "succeeded"], to: "ready" },
      cancel: { from: ["awaiting_destination", "ready"], to: "cancelled" },
    },
    move: viaRuleFor("refund", refundTransitions),
  },
  {
    record: "outgoing_transfer",
    states: ["matched", "unmatched", "reorged"],
    table: outgoingTransferTransitions,
    expected: {
      match: { from: ["unmatched"], to: "matched" },
      reorg: { from: ["matched", "unmatched"], to: "reorged" },
      restore: { from: ["reorged"], to: "unmatched" },
    },
    move: viaRuleFor("outgoing_transfer", outgoingTransferTransitions),
  },
  {
    record: "relayed authorization",
    states: ["queued", "submitted", "mined", "failed"],
    table: relayTransitions,
    expected: {
      submit: { from: ["queued"], to: "submitted" },
      replace: { from: ["submitted"], to: "submitted" },
      mine: { from: ["submitted"], to: "mined" },
      revert: { from: ["submitted"], to: "failed" },
      fail: { from: ["queued", "submitted", "failed"], to: "failed" },
    },
    move: viaRuleFor("relayed authorization", relayTransitions),
  },
  {
    record: "RWA purchase",
    states: ["held", "released"],
    table: purchaseTransitions,
    expected: {
      release: { from: ["held"], to: "released" },
      rehold: { from: ["released"], to: "held" },
      refund: { from: ["held"], to: "released" },
    },
    move: viaRuleFor("RWA purchase", purchaseTransitions),
  },
  {
    record: "reward",
    states: ["granted", "voucher_issued", "pending", "claimed", "revoked", "expired"],
    table: rewardTransitions,
    expected: {
      issueVoucher: { from: ["granted", "voucher_issued"], to: "voucher_issued" },
      seeClaim: { from: ["voucher_issued"], to: "pending" },
      confirmClaim: { from: ["voucher_issued", "pending"], to: "claimed" },
      dropClaim: { from: ["pending"], to: "voucher_issued" },
      reorgClaim: { from: ["claimed"], to: "voucher_issued" },
      revoke: { from: ["granted", "voucher_issued"], to: "revoked" },
      expire: { from: ["granted", "voucher_issued"], to: "expired" },
    },
    move: viaRuleFor("reward", rewardTransitions),
  },
  {
    record: "certificate",
    states: ["not_requested", "awaiting_wallet", "voucher_issued", "pending", "minted"],
    table: certificateTransitions,
    expected: {
      issueVoucher: { from: ["awaiting_wallet", "voucher_issued"], to: "voucher_issued" },
      seeMint: { from: ["voucher_issued"], to: "pending" },
      confirmMint: { from: ["voucher_issued", "pending"], to: "minted" },
    },
    move: viaRuleFor("certificate", certificateTransitions),
  },
  {
    record: "webhook delivery",
    states: ["pending", "delivered", "failed", "cancelled"],
    table: deliveryTransitions,
    expected: {
      deliver: { from: ["pending"], to: "delivered" },
      retry: { from: ["pending"], to: "pending" },
      fail: { from: ["pending"], to: "failed" },
      cancel: { from: ["pending"], to: "cancelled" },
      redeliver: { from: ["pending", "delivered", "failed", "cancelled"], to: "pending" },
    },
    move: viaRuleFor("webhook delivery", deliveryTransitions),
  },
];

describe("each record declares exactly the documented transitions", () => {
  it.each(RECORDS.map((r) => [r.record, r] as const))("%s", (_name, { table, expected }) => {
    expect(Object.keys(table).sort()).toEqual(Object.keys(expected).sort());
  });
});

const PAIRS = RECORDS.flatMap((r) =>
  Object.entries(r.expected).map(([transition, rule]) => [`${r.record}: ${transition}`, r, transition, rule] as const),
);

describe("every (state, transition) pair: the documented target, or TransitionRefused", () => {
  it.each(PAIRS)("%s", (_name, { record, states, move }, transition, rule) => {
    for (const state of states) {
      if (rule.from.includes(state)) {
        expect(move(transition, state), `${transition} from ${state}`).toBe(rule.to);
      } else {
        let refused: unknown;
        try {
          move(transition, state);
        } catch (error) {
          refused = error;
        }
        expect(refused, `${transition} from ${state}`).toBeInstanceOf(TransitionRefused);
        expect(refused).toMatchObject({ record, transition, from: state });
        expect((refused as Error).message).toBe(`${record}: transition "${transition}" is not allowed from "${state}"`);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The reward moves' `refuse` steps are pure (input, reward) → reason | undefined.

const NOW = 1_800_000_000_000;
const reward = (change: Partial<Reward> = {}): Reward => ({
  id: "rw_1",
  onchainId: `0x${"1".repeat(64)}` as Hex,
  partnerId: "ptr_a",
  orderId: "ord_1",
  externalOrderId: "ext-1",
  source: "grant",
  idempotencyKey: null,
  status: "granted",
  chainId: 31337,
  distributor: "0x00000000000000000000000000000000000000dd" as Address,
  token: "0x00000000000000000000000000000000000000cc" as Address,
  amount: 1_000n,
  funder: null,
  recipient: null,
  voucherDeadlineSeconds: null,
  transactionHash: null,
  blockNumber: null,
  claimedAt: null,
  revokedReason: null,
  revocationDue: null,
  expiresAt: NOW + 3_600_000,
  createdAt: NOW,
  updatedAt: NOW,
  ...change,
});
const WALLET = "0x00000000000000000000000000000000000000ee" as Address;
const expirySeconds = BigInt((NOW + 3_600_000) / 1000);

describe("reward guards", () => {
  const issue = (r: Reward, deadlineSeconds: bigint, indexedSeconds: bigint) =>
    rewardTransitions.issueVoucher.refuse({ recipient: WALLET, funder: WALLET, deadlineSeconds, indexedSeconds }, r);

  it.each([
    ["a granted reward, deadline inside the window", reward(), expirySeconds - 1n, 0n, undefined],
    ["a deadline exactly at the end of the claim window", reward(), expirySeconds, 0n, undefined],
    [
      "a deadline one second past the claim window",
      reward(),
      expirySeconds + 1n,
      0n,
      "the voucher's deadline would pass the claim window",
    ],
    [
      "a voucher out until a deadline the index has not passed",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: 1_000n }),
      expirySeconds,
      999n,
      "a voucher of this reward is still out until its deadline",
    ],
    [
      "a voucher whose deadline is the index's very second (still out)",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: 1_000n }),
      expirySeconds,
      1_000n,
      "a voucher of this reward is still out until its deadline",
    ],
    [
      "a voucher whose deadline the index passed",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: 1_000n }),
      expirySeconds,
      1_001n,
      undefined,
    ],
    [
      "a voucher_issued reward without a recorded deadline counts as out",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: null }),
      expirySeconds,
      10n ** 12n,
      "a voucher of this reward is still out until its deadline",
    ],
  ] as const)("issueVoucher: %s", (_case, r, deadline, indexed, reason) => {
    expect(issue(r, deadline, indexed)).toBe(reason);
  });

  const claim = (confirmations: number, required: number) => ({
    transactionHash: `0x${"a".repeat(64)}` as Hex,
    blockNumber: 10n,
    recipient: WALLET,
    confirmations,
    required,
  });

  it.each([
    [1, 3, undefined, "the claim has 1 of 3 confirmations"],
    [2, 3, undefined, "the claim has 2 of 3 confirmations"],
    [3, 3, "the claim is final: confirm it instead", undefined],
    [7, 3, "the claim is final: confirm it instead", undefined],
  ] as const)("a claim with %i of %i confirmations: seeClaim → %s, confirmClaim → %s", (have, need, see, confirm) => {
    expect(rewardTransitions.seeClaim.refuse(claim(have, need))).toBe(see);
    expect(rewardTransitions.confirmClaim.refuse(claim(have, need))).toBe(confirm);
  });

  it.each([
    ["still inside the claim window", reward(), NOW + 3_599_999, 0n, "the claim window is still open"],
    ["at the window's end instant", reward(), NOW + 3_600_000, 0n, undefined],
    [
      "past the window with a voucher still out",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: expirySeconds }),
      NOW + 3_600_000,
      expirySeconds,
      "a voucher of this reward is out until its deadline",
    ],
    [
      "past the window, the voucher's deadline behind the index",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: expirySeconds }),
      NOW + 3_600_000,
      expirySeconds + 1n,
      undefined,
    ],
  ] as const)("expire: %s", (_case, r, now, indexedSeconds, reason) => {
    expect(rewardTransitions.expire.refuse({ now, indexedSeconds }, r)).toBe(reason);
  });

  it.each([
    ["a granted reward", reward(), 0n, undefined],
    [
      "a voucher still out",
      reward({ status: "voucher_issued", voucherDeadlineSeconds: 50n }),
      50n,
      "a voucher of this reward is out until its deadline",
    ],
    ["a voucher the index is past", reward({ status: "voucher_issued", voucherDeadlineSeconds: 50n }), 51n, undefined],
  ] as const)("revoke: %s", (_case, r, indexedSeconds, reason) => {
    expect(rewardTransitions.revoke.refuse({ indexedSeconds, reason: "partner" }, r)).toBe(reason);
  });

  it("the columns a move sets keep addresses lower case and the deadline in seconds", () => {
    const mixed = "0x00000000000000000000000000000000000000EE" as Address;
    expect(
      rewardTransitions.issueVoucher.set({ recipient: mixed, funder: mixed, deadlineSeconds: 1_234n, indexedSeconds: 0n }),
    ).toEqual({ recipient: WALLET, funder: WALLET, voucher_deadline: 1_234 });
    expect(rewardTransitions.dropClaim.set({})).toEqual({ transaction_hash: null, block_number: null });
  });
});
