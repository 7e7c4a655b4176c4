import {
  type Address,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  isAddressEqual,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from "viem";
import { subscriptionManagerAbi } from "../../contracts/generated/SubscriptionManager.js";
import type { AppContext } from "../app-context.js";
import type { NetworkConfig } from "../config/networks.js";
import { RelayFailure, relayContractCall, relayerOf } from "../gasless/relayer.js";
import { isConfirmed } from "../indexed/confirmations.js";
import type { IndexedSubscriptionFacts } from "../indexed/indexed-chain.js";
import { logJson } from "../logging/redact.js";
import type { Worker } from "../workers/run-worker.js";
import { creditChargeOrder } from "./charge-order.js";
import {
  chargesOfSubscription,
  ensureCharge,
  findCharge,
  moveCharge,
  openChargesOf,
  type SubscriptionCharge,
} from "./charge-record.js";
import { findSubscription, moveSubscription, type Subscription, subscriptionsToFollow } from "./subscription-record.js";
import { currentPeriodIndex, nextRetryAt, pendingChargeVerdict, periodStart, shortfallOf } from "./subscription-rules.js";
import { subscriptionSettingsOf } from "./subscription-settings.js";
import { recordSubscriptionEvent } from "./subscriptions.js";

export const SUBSCRIPTION_WORKER_NAME = "subscriptions";
const BATCH = 200;

/**
 * Follows subscriptions on the chain and charges them (SPEC 18, docs/subscriptions.md "The
 * worker"). Each pass, per network with a manager: expires what waited 24 h; activates what the
 * index shows `Subscribed` under the terms issued last; cancels what was `Cancelled` on chain;
 * marks a charge paid once its `Charged` and its USDC transfer to the payee have the network's
 * confirmations (creating its order); and sends `charge(id)` for the period the chain's clock is
 * in, after reading balance and allowance. The clock of charges is the chain's latest block time,
 * never this machine's. Every state change writes its event in the same transaction.
 */
export function subscriptionWorker(context: AppContext, options: { intervalMs?: number } = {}): Worker {
  return {
    name: SUBSCRIPTION_WORKER_NAME,
    intervalMs: options.intervalMs ?? 250,
    async tick() {
      const heads = await context.indexed.heads();
      for (const network of context.networks) {
        const head = heads.get(network.chainId)?.blockNumber;
        if (network.subscriptionManager === undefined || head === undefined) continue;
        await followNetwork(context, network, network.subscriptionManager, head);
      }
    },
  };
}

/**
 * Every subscription the chain may still change, a page of `BATCH` at a time: a network with more
 * than one page of live subscriptions has each of them followed and charged on every pass (the
 * bench's 1,000 due together once saw only the oldest 200 charged).
 */
async function followNetwork(context: AppContext, network: NetworkConfig, manager: Address, head: bigint) {
  let after: { createdAt: number; id: string } | undefined;
  for (;;) {
    const page = await subscriptionsToFollow(context.store, { chainId: network.chainId, limit: BATCH, after });
    if (page.length > 0) await followPage(context, network, manager, head, page);
    if (page.length < BATCH) return;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}

async function followPage(
  context: AppContext,
  network: NetworkConfig,
  manager: Address,
  head: bigint,
  subscriptions: Subscription[],
) {
  const ids = subscriptions.flatMap((subscription) => (subscription.onchainId === null ? [] : [subscription.onchainId]));
  const facts = await context.indexed.subscriptionFacts({ chainId: network.chainId, manager, ids });
  const relayer = relayerOf(context, network, context.store);
  const chainNow = relayer === undefined ? undefined : Number((await relayer.client.getBlock({ blockTag: "latest" })).timestamp);
  const charges = await openChargesOf(
    context.store,
    subscriptions.map((subscription) => subscription.id),
  );
  for (const subscription of subscriptions) {
    try {
      await follow(context, { network, head, facts, chainNow, subscription, charges });
    } catch (error) {
      logJson({ level: "error", msg: "subscription step failed", subscriptionId: subscription.id, error: String(error) });
    }
  }
}

type Step = {
  network: NetworkConfig;
  head: bigint;
  facts: IndexedSubscriptionFacts;
  chainNow: number | undefined;
  subscription: Subscription;
  charges: SubscriptionCharge[];
};

async function follow(context: AppContext, step: Step) {
  let { subscription } = step;
  const onchainId = subscription.onchainId?.toLowerCase();
  const subscribed = step.facts.subscribed.find((fact) => fact.subscriptionId === onchainId);
  if (subscription.status === "awaiting_authorization" || subscription.status === "expired") {
    if (subscribed === undefined || !isConfirmed(subscribed, step.head, step.network.confirmations)) {
      if (subscription.status === "awaiting_authorization" && Date.now() >= subscription.expiresAt) {
        await transition(context, subscription, "expire", {});
      }
      return;
    }
    subscription = await transition(context, subscription, "activate", { onchainId: onchainId as Hex, activatedAt: Date.now() });
    if (subscription.status !== "active") return;
  }
  const cancelled = step.facts.cancelled.find((fact) => fact.subscriptionId === onchainId);
  if (cancelled !== undefined && isConfirmed(cancelled, step.head, step.network.confirmations)) {
    const cancelledBy =
      subscription.subscriber !== null && isAddressEqual(cancelled.by, subscription.subscriber) ? "customer" : "partner";
    await transition(context, subscription, "cancel", { cancelledBy });
    return;
  }
  const open = step.charges.filter((charge) => charge.subscriptionId === subscription.id);
  for (const charge of open) {
    const paid = await payIfCharged(context, step, subscription, charge);
    if (paid !== undefined) {
      subscription = paid;
      continue;
    }
    const after = await followPendingCharge(context, step, subscription, charge);
    if (after !== undefined) subscription = after;
  }
  if (subscription.status !== "active" && subscription.status !== "past_due") return;
  if (step.chainNow === undefined || subscription.termsStart === null || subscription.termsEnd === null) return;
  const terms = { start: subscription.termsStart, end: subscription.termsEnd, period: subscription.periodSeconds };
  if (step.chainNow >= terms.end) {
    await transition(context, subscription, "end", {});
    return;
  }
  const periodIndex = currentPeriodIndex(terms, step.chainNow);
  if (periodIndex === undefined) return;
  await chargePeriod(context, step, subscription, periodIndex);
}

type Facts = Parameters<typeof moveSubscription>[1]["facts"];

/** One subscription transition with its event, in one transaction; answers the subscription as it is after. */
async function transition(
  context: AppContext,
  subscription: Subscription,
  name: "activate" | "expire" | "cancel" | "end" | "fall_past_due" | "recover",
  facts: Facts,
): Promise<Subscription> {
  return context.store.transaction().execute(async (trx) => {
    const now = Date.now();
    const moved = await moveSubscription(trx, { subscription, transition: name, facts: facts as never, now });
    const after = (await findSubscription(trx, subscription.id)) as Subscription;
    if (!moved) return after;
    if (name === "activate")
      await recordSubscriptionEvent(trx, { subscription: after, type: "subscription.activated", extra: {}, now });
    if (name === "cancel") {
      const cancelledBy = (facts as { cancelledBy: "customer" | "partner" | "retries_exhausted" }).cancelledBy;
      await recordSubscriptionEvent(trx, { subscription: after, type: "subscription.cancelled", extra: { cancelledBy }, now });
    }
    if (name === "end") await recordSubscriptionEvent(trx, { subscription: after, type: "subscription.ended", extra: {}, now });
    if (name === "fall_past_due")
      await recordSubscriptionEvent(trx, { subscription: after, type: "subscription.past_due", extra: {}, now });
    return after;
  });
}

/**
 * A charge is paid when its `Charged` log and the USDC `Transfer` of its transaction from the
 * subscriber to the payee, of exactly its amount, have the network's confirmations. It then gets
 * its order with its payment (charge-order.ts), in the same transaction as its `subscription.charged`.
 */
async function payIfCharged(context: AppContext, step: Step, subscription: Subscription, charge: SubscriptionCharge) {
  const onchainId = subscription.onchainId?.toLowerCase();
  const charged = step.facts.charged.find((fact) => fact.subscriptionId === onchainId && fact.periodIndex === charge.periodIndex);
  if (charged === undefined || !isConfirmed(charged, step.head, step.network.confirmations)) return undefined;
  const transfers = await context.indexed.transfersByHash(charged.transactionHash);
  const transfer = transfers.find(
    (candidate) =>
      isAddressEqual(candidate.to, subscription.payee) &&
      subscription.subscriber !== null &&
      isAddressEqual(candidate.from, subscription.subscriber) &&
      candidate.value === charge.amount,
  );
  if (transfer === undefined || !isConfirmed(transfer, step.head, step.network.confirmations)) return undefined;
  return context.store.transaction().execute(async (trx) => {
    const now = Date.now();
    const current = await findCharge(trx, charge.id);
    if (current === undefined || current.status === "paid") return undefined;
    // A failed charge waits for its retry (`due` again) before the chain's payment of it is taken.
    if (current.status === "failed") return undefined;
    const order = await creditChargeOrder(trx, {
      subscription,
      charge: current,
      transfer,
      network: step.network,
      now,
    });
    const paid = await moveCharge(trx, {
      charge: current,
      transition: "pay",
      facts: {
        orderId: order.id,
        transactionHash: charged.transactionHash,
        logIndex: charged.logIndex,
        blockNumber: charged.blockNumber,
      },
      now,
    });
    if (!paid) return undefined;
    let after = (await findSubscription(trx, subscription.id)) as Subscription;
    if (
      after.status === "past_due" &&
      (await moveSubscription(trx, { subscription: after, transition: "recover", facts: {}, now }))
    ) {
      after = (await findSubscription(trx, subscription.id)) as Subscription;
    }
    await recordSubscriptionEvent(trx, {
      subscription: after,
      type: "subscription.charged",
      extra: {
        chargeId: charge.id,
        periodIndex: Number(charge.periodIndex),
        orderId: order.id,
        externalOrderId: order.externalOrderId,
        transactionHash: charged.transactionHash,
      },
      now,
    });
    return after;
  });
}

/**
 * A pending charge whose `Charged` the index does not hold (not yet, or no longer: a reorg took
 * its unconfirmed block) is looked up on the chain, as the settlement worker looks up a pending
 * payment: a reverted transaction fails the charge (`reverted`, retried on the schedule); one the
 * chain no longer knows (dropped, or reorged away and not re-included) puts the charge back to
 * `due`, so this period is charged again; one mined, or still waiting in the node's pool, waits
 * for the index. A node that does not answer changes nothing. Answers the subscription when it
 * changed.
 */
async function followPendingCharge(
  context: AppContext,
  step: Step,
  subscription: Subscription,
  charge: SubscriptionCharge,
): Promise<Subscription | undefined> {
  if (charge.status !== "pending" || charge.transactionHash === null) return undefined;
  const onchainId = subscription.onchainId?.toLowerCase();
  if (step.facts.charged.some((fact) => fact.subscriptionId === onchainId && fact.periodIndex === charge.periodIndex))
    return undefined;
  const client = context.rpc.get(subscription.chainId);
  if (client === undefined) return undefined;
  const hash = charge.transactionHash;
  const receipt = await client
    .getTransactionReceipt({ hash })
    .catch((error: unknown) => (error instanceof TransactionReceiptNotFoundError ? null : undefined));
  // The pool is asked only when there is no receipt: a mined transaction is no question for it.
  const inPool =
    receipt === null
      ? await client
          .getTransaction({ hash })
          .then(() => true)
          .catch((error: unknown) => (error instanceof TransactionNotFoundError ? false : undefined))
      : undefined;
  const verdict = pendingChargeVerdict({
    receipt: receipt === undefined ? undefined : receipt === null ? null : receipt.status,
    inPool,
  });
  if (verdict === "wait") return undefined;
  if (verdict === "reverted") {
    const chainNow = step.chainNow ?? Number((await client.getBlock({ blockTag: "latest" })).timestamp);
    return failCharge(context, subscription, charge, "reverted", chainNow);
  }
  await context.store
    .transaction()
    .execute((trx) => moveCharge(trx, { charge, transition: "reopen", facts: {}, now: Date.now() }));
  logJson({ level: "warn", msg: "a subscription charge left the chain: due again", chargeId: charge.id, transactionHash: hash });
  return undefined;
}

/**
 * Charges the period the chain's clock is in, once: its charge record is created once per
 * (subscription, period index). A failed charge waits for its retry time (chain time); a pending
 * one waits for the index. Balance and allowance are read first, so a charge that would revert is
 * never sent.
 */
async function chargePeriod(context: AppContext, step: Step, subscription: Subscription, periodIndex: bigint) {
  const chainNow = step.chainNow as number;
  const terms = { start: subscription.termsStart as number, period: subscription.periodSeconds };
  if (subscription.cancelAtPeriodEnd) {
    // The partner's cancel at period end: a period without a charge yet is one the partner did not sell.
    const charges = await chargesOfSubscription(context.store, subscription.id);
    if (!charges.some((charge) => charge.periodIndex === periodIndex)) {
      await transition(context, subscription, "cancel", { cancelledBy: "partner" });
      return;
    }
  }
  const { charge } = await context.store.transaction().execute((trx) =>
    ensureCharge(trx, {
      subscriptionId: subscription.id,
      partnerId: subscription.partnerId,
      periodIndex,
      amount: subscription.amount,
      dueAt: periodStart(terms, periodIndex) * 1000,
      now: Date.now(),
    }),
  );
  let current = charge;
  if (current.status === "failed") {
    if (current.nextRetryAt === null || chainNow * 1000 < current.nextRetryAt) return;
    const retried = await context.store
      .transaction()
      .execute((trx) => moveCharge(trx, { charge: current, transition: "retry", facts: {}, now: chainNow * 1000 }));
    if (!retried) return;
    current = { ...current, status: "due" };
  }
  if (current.status !== "due") return;
  const relayer = relayerOf(context, step.network, context.store);
  if (relayer === undefined || subscription.subscriber === null || subscription.onchainId === null) return;
  const [balance, allowance] = await Promise.all([
    relayer.client.readContract({
      address: subscription.token,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [subscription.subscriber],
    }),
    relayer.client.readContract({
      address: subscription.token,
      abi: erc20Abi,
      functionName: "allowance",
      args: [subscription.subscriber, subscription.manager],
    }),
  ]);
  const shortfall = shortfallOf({ amount: subscription.amount, balance, allowance });
  if (shortfall !== undefined) {
    await failCharge(context, subscription, current, shortfall, chainNow);
    return;
  }
  const data = encodeFunctionData({
    abi: subscriptionManagerAbi,
    functionName: "charge",
    args: [subscription.onchainId],
  });
  try {
    const sent = await relayContractCall(context, relayer, {
      charge: { partnerId: subscription.partnerId, chainId: subscription.chainId, purpose: "subscription", subjectId: null },
      call: { to: subscription.manager, data },
    });
    await context.store
      .transaction()
      .execute((trx) =>
        moveCharge(trx, { charge: current, transition: "submit", facts: { transactionHash: sent.hash }, now: Date.now() }),
      );
  } catch (error) {
    // A call that would revert (already charged this period, cancelled on chain) is never sent.
    if (error instanceof RelayFailure && error.code === "authorization_rejected_on_chain") {
      logJson({ level: "warn", msg: "subscription charge refused on chain", chargeId: current.id, error: error.message });
      return;
    }
    throw error;
  }
}

/**
 * Records a failed charge with its retry time (chain time), `charge_failed`, and `past_due`; after
 * the last retry, cancels. Answers the subscription as it is after.
 */
async function failCharge(
  context: AppContext,
  subscription: Subscription,
  charge: SubscriptionCharge,
  failureReason: "insufficient_balance" | "insufficient_allowance" | "reverted",
  chainNow: number,
): Promise<Subscription | undefined> {
  // A refusal before sending counts as an attempt (charge-record.ts `fail`); a sent one was counted when sent.
  const attempts = charge.status === "due" ? charge.attempts + 1 : charge.attempts;
  const { retryDelaysSeconds } = await subscriptionSettingsOf(context.store, subscription.partnerId);
  const retryAt = nextRetryAt(chainNow, attempts, retryDelaysSeconds);
  return context.store.transaction().execute(async (trx) => {
    const now = Date.now();
    const failed = await moveCharge(trx, {
      charge,
      transition: "fail",
      facts: { failureReason, nextRetryAt: retryAt === null ? null : retryAt * 1000 },
      now,
    });
    if (!failed) return undefined;
    let after = (await findSubscription(trx, subscription.id)) as Subscription;
    await recordSubscriptionEvent(trx, {
      subscription: after,
      type: "subscription.charge_failed",
      extra: {
        chargeId: charge.id,
        periodIndex: Number(charge.periodIndex),
        failureReason,
        nextRetryAt: retryAt === null ? null : new Date(retryAt * 1000).toISOString(),
      },
      now,
    });
    if (
      after.status === "active" &&
      (await moveSubscription(trx, { subscription: after, transition: "fall_past_due", facts: {}, now }))
    ) {
      after = (await findSubscription(trx, subscription.id)) as Subscription;
      await recordSubscriptionEvent(trx, { subscription: after, type: "subscription.past_due", extra: {}, now });
    }
    if (
      retryAt === null &&
      (await moveSubscription(trx, {
        subscription: after,
        transition: "cancel",
        facts: { cancelledBy: "retries_exhausted" },
        now,
      }))
    ) {
      after = (await findSubscription(trx, subscription.id)) as Subscription;
      await recordSubscriptionEvent(trx, {
        subscription: after,
        type: "subscription.cancelled",
        extra: { cancelledBy: "retries_exhausted" },
        now,
      });
    }
    return after;
  });
}
