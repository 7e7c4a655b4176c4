import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { describe, expect, it } from "vitest";
import { CERTIFICATE_TRANSITIONS, certificateMayMove } from "../../api/certificates/certificate-record.js";
import { sessionTransitions } from "../../api/checkout/session-record.js";
import { RELAY_TRANSITIONS } from "../../api/gasless/relayed-authorization-record.js";
import { orderTransitions } from "../../api/orders/order-record.js";
import { DELIVERY_TRANSITIONS, deliveryMayMove } from "../../api/outbox/deliveries.js";
import { paymentTransitions } from "../../api/payments/payment-record.js";
import { purchaseTransitions } from "../../api/purchases/purchase-record.js";
import { outgoingTransferTransitions } from "../../api/refunds/outgoing-transfer-record.js";
import { refundTransitions } from "../../api/refunds/refund-record.js";
import { REWARD_TRANSITIONS, type Reward, rewardMayMove } from "../../api/rewards/reward-record.js";
import type { CertificateStatus } from "../../api/store/database.js";
import type { RewardStatus } from "../../api/store/reward-tables.js";
import { ruleFor, TransitionRefused } from "../../api/store/transition-table.js";
import type { WebhookDeliveryStatus } from "../../api/store/webhook-tables.js";

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
  /** How the record module decides: `ruleFor` for the tables that use it, the record's own `…MayMove` for the others. */
  move: (transition: string, state: string) => string;
};

const viaRuleFor =
  (record: string, table: Record<string, Rule>) =>
  (transition: string, state: string): string =>
    ruleFor(record, table, transition, state).to;

const viaMayMove =
  (record: string, table: Record<string, Rule>, mayMove: (state: string, transition: string) => boolean) =>
  (transition: string, state: string): string => {
    if (!mayMove(state, transition)) throw new TransitionRefused(record, transition, state);
    return (table[transition] as Rule).to;
  };

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
    table: RELAY_TRANSITIONS,
    expected: {
      submit: { from: ["queued"], to: "submitted" },
      replace: { from: ["submitted"], to: "submitted" },
      mine: { from: ["submitted"], to: "mined" },
      revert: { from: ["submitted"], to: "failed" },
      fail: { from: ["queued", "submitted", "failed"], to: "failed" },
    },
    move: viaRuleFor("relayed authorization", RELAY_TRANSITIONS),
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
    table: REWARD_TRANSITIONS,
    expected: {
      issueVoucher: { from: ["granted", "voucher_issued"], to: "voucher_issued" },
      seeClaim: { from: ["voucher_issued"], to: "pending" },
      confirmClaim: { from: ["voucher_issued", "pending"], to: "claimed" },
      dropClaim: { from: ["pending"], to: "voucher_issued" },
      reorgClaim: { from: ["claimed"], to: "voucher_issued" },
      revoke: { from: ["granted", "voucher_issued"], to: "revoked" },
      expire: { from: ["granted", "voucher_issued"], to: "expired" },
    },
    move: viaMayMove("reward", REWARD_TRANSITIONS, (state, transition) =>
      rewardMayMove(state as RewardStatus, transition as keyof typeof REWARD_TRANSITIONS),
    ),
  },
  {
    record: "certificate",
    states: ["not_requested", "awaiting_wallet", "voucher_issued", "pending", "minted"],
    table: CERTIFICATE_TRANSITIONS,
    expected: {
      issueVoucher: { from: ["awaiting_wallet", "voucher_issued"], to: "voucher_issued" },
      seeMint: { from: ["voucher_issued"], to: "pending" },
      confirmMint: { from: ["voucher_issued", "pending"], to: "minted" },
    },
    move: viaMayMove("certificate", CERTIFICATE_TRANSITIONS, (state, transition) =>
      certificateMayMove(state as CertificateStatus, transition as keyof typeof CERTIFICATE_TRANSITIONS),
    ),
  },
  {
    record: "webhook delivery",
    states: ["pending", "delivered", "failed", "cancelled"],
    table: DELIVERY_TRANSITIONS,
    expected: {
      deliver: { from: ["pending"], to: "delivered" },
      retry: { from: ["pending"], to: "pending" },
      fail: { from: ["pending"], to: "failed" },
      cancel: { from: ["pending"], to: "cancelled" },
      redeliver: { from: ["pending", "delivered", "failed", "cancelled"], to: "pending" },
    },
    move: viaMayMove("webhook delivery", DELIVERY_TRANSITIONS, (state, transition) =>
      deliveryMayMove(state as WebhookDeliveryStatus, transition as keyof typeof DELIVERY_TRANSITIONS),
    ),
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
// docs/architecture.md prints the refund and outgoing-transfer tables too (the doc test in
// architecture-doc.test.ts covers the other eight): the printed rows must be the code's.

const page = readFileSync(join(import.meta.dirname, "..", "..", "docs", "architecture.md"), "utf8");
const names = (cell: string) => [...cell.matchAll(/`([a-z_A-Z]+)`/g)].map((match) => match[1] as string);

describe("docs/architecture.md prints the refund records' transitions as the code declares them", () => {
  it("the refund table under ## Refunds", () => {
    const section = page.slice(page.indexOf("## Refunds (`api/refunds/`)"));
    const lines = section.split("\n");
    const header = lines.findIndex((line) => /^\|\s*transition\s*\|\s*from\s*\|\s*to\s*\|/.test(line));
    expect(header).toBeGreaterThan(0);
    const printed: Expected = {};
    for (const line of lines.slice(header + 2)) {
      if (!line.startsWith("|")) break;
      const [name, from, to] = line.split("|").slice(1, 4) as [string, string, string];
      printed[names(name)[0] as string] = { from: names(from).sort(), to: names(to)[0] as string };
    }
    const declared = Object.fromEntries(
      Object.entries(refundTransitions).map(([name, rule]) => [name, { from: [...rule.from].sort(), to: rule.to }]),
    );
    expect(printed).toEqual(declared);
  });

  it("the outgoing-transfer sentence: `name` (`from`, … → `to`, …)", () => {
    const sentence = page.slice(page.indexOf("Outgoing transfers: "));
    const printed: Expected = {};
    for (const match of sentence.matchAll(/`([a-z_]+)` \(([^)]*)→\s*`([a-z_]+)`/g)) {
      printed[match[1] as string] = { from: names(match[2] as string).sort(), to: match[3] as string };
    }
    const declared = Object.fromEntries(
      Object.entries(outgoingTransferTransitions).map(([name, rule]) => [name, { from: [...rule.from].sort(), to: rule.to }]),
    );
    expect(printed).toEqual(declared);
  });
});

// ---------------------------------------------------------------------------------------------
// The reward moves' guards are pure (reward, input) → reason | undefined.

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
    REWARD_TRANSITIONS.issueVoucher.guard(r, { recipient: WALLET, funder: WALLET, deadlineSeconds, indexedSeconds });

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
    expect(REWARD_TRANSITIONS.seeClaim.guard(reward(), claim(have, need))).toBe(see);
    expect(REWARD_TRANSITIONS.confirmClaim.guard(reward(), claim(have, need))).toBe(confirm);
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
    expect(REWARD_TRANSITIONS.expire.guard(r, { now, indexedSeconds })).toBe(reason);
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
    expect(REWARD_TRANSITIONS.revoke.guard(r, { indexedSeconds, reason: "partner" })).toBe(reason);
  });

  it("the columns a move sets keep addresses lower case and the deadline in seconds", () => {
    const mixed = "0x00000000000000000000000000000000000000EE" as Address;
    expect(
      REWARD_TRANSITIONS.issueVoucher.set({ recipient: mixed, funder: mixed, deadlineSeconds: 1_234n, indexedSeconds: 0n }),
    ).toEqual({ recipient: WALLET, funder: WALLET, voucher_deadline: 1_234 });
    expect(REWARD_TRANSITIONS.dropClaim.set({})).toEqual({ transaction_hash: null, block_number: null });
  });
});
