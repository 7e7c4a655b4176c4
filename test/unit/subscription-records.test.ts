import { getAddress, type Hex, keccak256, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../api/store/open-store.js";
import type { SubscriptionChargeStatus, SubscriptionStatus } from "../../api/store/subscription-tables.js";
import { allows, edges, ruleFor, TransitionRefused } from "../../api/store/transition-table.js";
import {
  type ChargeTransition,
  chargesOfSubscription,
  chargeTransitions,
  ensureCharge,
  findCharge,
  moveCharge,
} from "../../api/subscriptions/charge-record.js";
import {
  findPartnerSubscription,
  findSubscription,
  insertSubscription,
  markCancelAtPeriodEnd,
  moveSubscription,
  recordAuthorizationTransaction,
  recordTerms,
  SUBSCRIPTION_AUTHORIZATION_WINDOW_MS,
  type Subscription,
  type SubscriptionTransition,
  subscriptionOfOnchainId,
  subscriptionsToFollow,
  subscriptionTransitions,
} from "../../api/subscriptions/subscription-record.js";
import { seedOrder, UNIT_PAY_TO, UNIT_PAYER, UNIT_USDC, unitStore } from "../support/unit-store.js";

/**
 * The subscription and charge records (SPEC 18): their transition tables, and the modules
 * applied to a real SQLite store (no chain: the facts the index would hold are given).
 */

const SUBSCRIPTION_STATUSES: SubscriptionStatus[] = [
  "awaiting_authorization",
  "active",
  "past_due",
  "cancelled",
  "ended",
  "expired",
];
const CHARGE_STATUSES: SubscriptionChargeStatus[] = ["due", "pending", "paid", "failed"];
const MANAGER = getAddress("0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9");
const PARTNER = "ptr_subs";
const HOUR = 3_600_000;
const txHash = (label: string): Hex => keccak256(toHex(label));

describe("subscription transitions", () => {
  it("the subscription table allows exactly these changes", () => {
    const legal = edges(subscriptionTransitions).map((edge) => `${edge.transition}: ${edge.from} -> ${edge.to}`);
    expect(legal.sort()).toEqual(
      [
        "activate: awaiting_authorization -> active",
        "activate: expired -> active",
        "fall_past_due: active -> past_due",
        "recover: past_due -> active",
        "cancel: awaiting_authorization -> cancelled",
        "cancel: active -> cancelled",
        "cancel: past_due -> cancelled",
        "end: active -> ended",
        "end: past_due -> ended",
        "expire: awaiting_authorization -> expired",
      ].sort(),
    );
  });

  it("names only known statuses; cancelled and ended are final", () => {
    for (const edge of edges(subscriptionTransitions)) {
      expect(SUBSCRIPTION_STATUSES).toContain(edge.from);
      expect(SUBSCRIPTION_STATUSES).toContain(edge.to);
    }
    for (const final of ["cancelled", "ended"] as const) {
      for (const transition of Object.keys(subscriptionTransitions) as SubscriptionTransition[]) {
        expect(allows(subscriptionTransitions, transition, final), `${transition} from ${final}`).toBe(false);
      }
    }
    expect(() => ruleFor("subscription", subscriptionTransitions, "recover", "active")).toThrow(TransitionRefused);
    expect(() => ruleFor("subscription", subscriptionTransitions, "fall_past_due", "awaiting_authorization")).toThrow(
      /transition "fall_past_due" is not allowed from "awaiting_authorization"/,
    );
  });
});

describe("charge transitions", () => {
  it("the charge table allows exactly these changes", () => {
    const legal = edges(chargeTransitions).map((edge) => `${edge.transition}: ${edge.from} -> ${edge.to}`);
    expect(legal.sort()).toEqual(
      [
        "submit: due -> pending",
        "pay: due -> paid",
        "pay: pending -> paid",
        "fail: due -> failed",
        "fail: pending -> failed",
        "retry: failed -> due",
        "reopen: pending -> due",
      ].sort(),
    );
  });

  it("names only known statuses; a paid charge never changes again", () => {
    for (const edge of edges(chargeTransitions)) {
      expect(CHARGE_STATUSES).toContain(edge.from);
      expect(CHARGE_STATUSES).toContain(edge.to);
    }
    for (const transition of Object.keys(chargeTransitions) as ChargeTransition[]) {
      expect(allows(chargeTransitions, transition, "paid"), transition).toBe(false);
    }
    expect(() => ruleFor("subscription charge", chargeTransitions, "retry", "pending")).toThrow(TransitionRefused);
  });
});

describe("subscription and charge records on a real store", () => {
  let store: Store;
  let close: () => Promise<void>;
  let counter = 0;

  beforeAll(async () => {
    ({ store, close } = await unitStore());
    await seedOrder(store, { partnerId: PARTNER, orderId: "ord_subs_1", purchaseId: txHash("purchase-1") });
  });
  afterAll(async () => {
    await close?.();
  });

  async function newSubscription(overrides: { idempotencyKey?: string | null; now?: number } = {}) {
    const now = overrides.now ?? Date.now();
    return store.transaction().execute((trx) =>
      insertSubscription(trx, {
        partnerId: PARTNER,
        externalCustomerId: `cus_${++counter}`,
        productName: "Pro plan",
        amount: 9_990_000n,
        interval: "month",
        periodSeconds: 30 * 86_400,
        startAt: null,
        endAt: null,
        metadata: { plan: "pro" },
        successUrl: null,
        cancelUrl: null,
        idempotencyKey: overrides.idempotencyKey === undefined ? `idem_${counter}` : overrides.idempotencyKey,
        clientTokenHash: "ab".repeat(32),
        chainId: 31337,
        manager: MANAGER,
        token: UNIT_USDC,
        payee: UNIT_PAY_TO,
        now,
      }),
    );
  }

  const move = <name extends SubscriptionTransition>(
    subscription: Subscription,
    transition: name,
    facts: Parameters<typeof moveSubscription<name>>[1]["facts"],
    now = Date.now(),
  ) => store.transaction().execute((trx) => moveSubscription(trx, { subscription, transition, facts, now }));

  const reread = async (id: string) => (await findSubscription(store, id)) as Subscription;

  it("pages through every subscription to follow, ties of creation time included (the worker follows them all, not the oldest page)", async () => {
    const longAgo = Date.now() - 3 * 86_400_000;
    const ours = new Set<string>();
    for (let index = 0; index < 5; index += 1) ours.add((await newSubscription({ now: longAgo })).subscription.id);
    const everything = await subscriptionsToFollow(store, { chainId: 31337, limit: 10_000 });
    const seen: string[] = [];
    let after: { createdAt: number; id: string } | undefined;
    for (;;) {
      const page = await subscriptionsToFollow(store, { chainId: 31337, limit: 2, after });
      seen.push(...page.map((subscription) => subscription.id));
      if (page.length < 2) break;
      after = { createdAt: page[1]!.createdAt, id: page[1]!.id };
    }
    expect(seen).toEqual(everything.map((subscription) => subscription.id));
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of ours) expect(seen).toContain(id);
  });

  it("creates it awaiting authorisation, in domain types, and a replayed key answers the same one", async () => {
    const now = Date.now();
    const { subscription, created } = await newSubscription({ idempotencyKey: "idem_replay", now });
    expect(created).toBe(true);
    expect(subscription).toMatchObject({
      status: "awaiting_authorization",
      amount: 9_990_000n,
      periodSeconds: 2_592_000,
      manager: MANAGER,
      token: getAddress(UNIT_USDC),
      payee: getAddress(UNIT_PAY_TO),
      metadata: { plan: "pro" },
      cancelAtPeriodEnd: false,
      expiresAt: now + SUBSCRIPTION_AUTHORIZATION_WINDOW_MS,
    });
    expect(subscription.id).toMatch(/^sub_[0-9a-f]{24}$/);
    const replay = await newSubscription({ idempotencyKey: "idem_replay" });
    expect(replay).toEqual({ subscription, created: false });
    expect(await findPartnerSubscription(store, { partnerId: "ptr_other", id: subscription.id })).toBeUndefined();
  });

  it("issued terms name the on-chain id; only the id last issued activates it", async () => {
    const { subscription } = await newSubscription();
    const first = txHash(`terms-1-${subscription.id}`);
    const second = txHash(`terms-2-${subscription.id}`);
    for (const onchainId of [first, second]) {
      const recorded = await store.transaction().execute((trx) =>
        recordTerms(trx, {
          subscription,
          subscriber: UNIT_PAYER,
          onchainId: onchainId.toUpperCase().replace("0X", "0x") as Hex,
          termsStart: 1_800_000_000,
          termsEnd: 2 ** 48 - 1,
          permitValue: 12n * 9_990_000n,
          now: Date.now(),
        }),
      );
      expect(recorded).toBe(true);
    }
    expect((await subscriptionOfOnchainId(store, second))?.id).toBe(subscription.id);
    expect(await subscriptionOfOnchainId(store, first)).toBeUndefined();
    const issued = await reread(subscription.id);
    expect(issued).toMatchObject({ subscriber: getAddress(UNIT_PAYER), termsEnd: 2 ** 48 - 1, permitValue: 119_880_000n });

    const relayed = await store
      .transaction()
      .execute((trx) =>
        recordAuthorizationTransaction(trx, { subscription, transactionHash: txHash("relayed"), now: Date.now() }),
      );
    expect(relayed).toBe(true);
    expect((await reread(subscription.id)).authorizationTransactionHash).toBe(txHash("relayed"));

    expect(await move(issued, "activate", { onchainId: first, activatedAt: 1 })).toBe(false);
    expect(await move(issued, "activate", { onchainId: second, activatedAt: 5 })).toBe(true);
    expect(await reread(subscription.id)).toMatchObject({ status: "active", activatedAt: 5 });
    // Terms are fixed once it is active.
    const late = await store.transaction().execute((trx) =>
      recordTerms(trx, {
        subscription,
        subscriber: UNIT_PAY_TO,
        onchainId: first,
        termsStart: 1,
        termsEnd: 2,
        permitValue: 1n,
        now: Date.now(),
      }),
    );
    expect(late).toBe(false);
  });

  it("active → past_due → active → cancelled, with who cancelled; a stale read moves nothing", async () => {
    const { subscription } = await newSubscription();
    const onchainId = txHash(`terms-${subscription.id}`);
    await store.transaction().execute((trx) =>
      recordTerms(trx, {
        subscription,
        subscriber: UNIT_PAYER,
        onchainId,
        termsStart: 1,
        termsEnd: 2 ** 48 - 1,
        permitValue: 1n,
        now: Date.now(),
      }),
    );
    expect(await move(await reread(subscription.id), "activate", { onchainId, activatedAt: 1 })).toBe(true);
    const active = await reread(subscription.id);
    expect(await move(active, "fall_past_due", {})).toBe(true);
    // Read as active before the move: the guarded UPDATE refuses it.
    expect(await move(active, "fall_past_due", {})).toBe(false);
    expect(await move(await reread(subscription.id), "recover", {})).toBe(true);
    const recovered = await reread(subscription.id);
    expect(await store.transaction().execute((trx) => markCancelAtPeriodEnd(trx, { subscription, now: Date.now() }))).toBe(true);
    expect((await reread(subscription.id)).cancelAtPeriodEnd).toBe(true);
    const now = Date.now();
    expect(await move(recovered, "cancel", { cancelledBy: "partner" }, now)).toBe(true);
    const cancelled = await reread(subscription.id);
    expect(cancelled).toMatchObject({ status: "cancelled", cancelledBy: "partner", cancelledAt: now });
    await expect(move(cancelled, "recover", {})).rejects.toThrow(TransitionRefused);
    await expect(move(cancelled, "end", {})).rejects.toThrow(TransitionRefused);
  });

  it("expires only after its 24 hours", async () => {
    const now = Date.now();
    const { subscription } = await newSubscription({ now });
    expect(await move(subscription, "expire", {}, now + SUBSCRIPTION_AUTHORIZATION_WINDOW_MS - 1)).toBe(false);
    expect(await move(subscription, "expire", {}, now + SUBSCRIPTION_AUTHORIZATION_WINDOW_MS)).toBe(true);
    expect((await reread(subscription.id)).status).toBe("expired");
  });

  it("writes only inside the caller's transaction", async () => {
    const { subscription } = await newSubscription();
    await expect(
      moveSubscription(store, { subscription, transition: "cancel", facts: { cancelledBy: "customer" }, now: Date.now() }),
    ).rejects.toThrow(/inside the caller's transaction/);
  });

  it("one charge per period, however many workers create it; due → pending → failed → due → pending → paid", async () => {
    const { subscription } = await newSubscription();
    const create = () =>
      store.transaction().execute((trx) =>
        ensureCharge(trx, {
          subscriptionId: subscription.id,
          partnerId: PARTNER,
          periodIndex: 0n,
          amount: subscription.amount,
          dueAt: 1_000,
          now: Date.now(),
        }),
      );
    const [one, two] = await Promise.all([create(), create()]);
    expect([one?.created, two?.created].sort()).toEqual([false, true]);
    expect(one?.charge.id).toBe(two?.charge.id);
    const charge = one!.charge;
    expect(charge).toMatchObject({ status: "due", periodIndex: 0n, amount: 9_990_000n, attempts: 0 });
    expect(charge.id).toMatch(/^sch_[0-9a-f]{24}$/);

    const moveIt = <name extends ChargeTransition>(
      name: name,
      facts: Parameters<typeof moveCharge<name>>[1]["facts"],
      now = Date.now(),
    ) =>
      store.transaction().execute(async (trx) => {
        const current = (await findCharge(trx, charge.id))!;
        return moveCharge(trx, { charge: current, transition: name, facts, now });
      });
    expect(await moveIt("submit", { transactionHash: txHash("charge-1") })).toBe(true);
    expect(await findCharge(store, charge.id)).toMatchObject({
      status: "pending",
      attempts: 1,
      transactionHash: txHash("charge-1"),
    });
    const retryAt = Date.now() + HOUR;
    expect(await moveIt("fail", { failureReason: "reverted", nextRetryAt: retryAt })).toBe(true);
    expect(await findCharge(store, charge.id)).toMatchObject({
      status: "failed",
      failureReason: "reverted",
      nextRetryAt: retryAt,
    });
    expect(await moveIt("retry", {}, retryAt - 1)).toBe(false);
    expect(await moveIt("retry", {}, retryAt)).toBe(true);
    expect(await moveIt("submit", { transactionHash: txHash("charge-2") })).toBe(true);
    expect(
      await moveIt("pay", { orderId: "ord_subs_1", transactionHash: txHash("charge-2"), logIndex: 3, blockNumber: 42n }),
    ).toBe(true);
    const paid = await findCharge(store, charge.id);
    expect(paid).toMatchObject({
      status: "paid",
      attempts: 2,
      orderId: "ord_subs_1",
      logIndex: 3,
      blockNumber: 42n,
      failureReason: null,
      nextRetryAt: null,
    });
    await expect(moveIt("fail", { failureReason: "reverted", nextRetryAt: null })).rejects.toThrow(TransitionRefused);
  });

  it("a worker that read a charge before another's attempt moves nothing", async () => {
    const { subscription } = await newSubscription();
    const { charge } = await store.transaction().execute((trx) =>
      ensureCharge(trx, {
        subscriptionId: subscription.id,
        partnerId: PARTNER,
        periodIndex: 4n,
        amount: subscription.amount,
        dueAt: 1_000,
        now: Date.now(),
      }),
    );
    const submit = (hash: Hex) =>
      store
        .transaction()
        .execute((trx) => moveCharge(trx, { charge, transition: "submit", facts: { transactionHash: hash }, now: Date.now() }));
    expect(await submit(txHash("first"))).toBe(true);
    expect(await submit(txHash("second"))).toBe(false);
    await store.transaction().execute(async (trx) => {
      const pending = (await findCharge(trx, charge.id))!;
      expect(await moveCharge(trx, { charge: pending, transition: "reopen", facts: {}, now: Date.now() })).toBe(true);
    });
    expect(await chargesOfSubscription(store, subscription.id)).toMatchObject([
      { periodIndex: 4n, status: "due", attempts: 1, transactionHash: null },
    ]);
  });
});
