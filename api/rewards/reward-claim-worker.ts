import { getAddress, isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import type { NetworkConfig } from "../config/networks.js";
import { indexReadGate } from "../indexed/chain-activity.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedRewardClaim } from "../indexed/indexed-chain.js";
import { getOrder } from "../orders/order-record.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { recordEvent } from "../outbox/record-event.js";
import { sameHex } from "../values/checksum-address.js";
import { type Worker, wakeWorker } from "../workers/run-worker.js";
import { indexedSecondsOf } from "./revoke-reward.js";
import {
  moveReward,
  type Reward,
  rewardsAwaitingClaim,
  rewardsByOnchainIds,
  rewardsPastWindow,
  type SeenClaim,
} from "./reward-record.js";
import { recordUnknownClaim } from "./unknown-claims.js";

export const REWARD_WORKER_NAME = "reward-claims";
const BATCH = 250;

/**
 * Moves rewards along as the index sees their claims (docs/rewards.md):
 *
 * - every new `RewardClaimed` of a distributor (read after a per-chain block cursor
 *   kept in memory; a restart reads them again, which changes nothing) is matched to
 *   its reward by the on-chain id: `voucher_issued` → `pending`, or straight to
 *   `claimed` when already deep enough; a claim of no reward, or of one that was not
 *   expecting it, is recorded for the admin;
 * - every `pending` reward is looked at again: `claimed` with `reward.claimed` once
 *   the network's confirmations are there (in the same transaction), back to
 *   `voucher_issued` if its claim left the index;
 * - rewards past their claim window with no voucher out become `expired`.
 */
export function rewardClaimWorker(context: AppContext, options: { intervalMs?: number } = {}): Worker {
  const fromBlock = new Map<number, bigint>();
  // While the indexer is idle no claim can appear: a pass runs once a second, not five times.
  const indexGate = indexReadGate(1_000);
  return {
    name: REWARD_WORKER_NAME,
    intervalMs: options.intervalMs ?? 200,
    async tick() {
      if (!indexGate()) return;
      const now = Date.now();
      let changed = false;
      for (const network of context.networks) {
        const distributor = network.rewardDistributor;
        if (distributor === undefined) continue;
        const start = fromBlock.get(network.chainId) ?? 0n;
        const claims = await context.indexed.rewardClaims({ chainIds: [network.chainId], fromBlock: start, limit: BATCH });
        const ofDistributor = claims.filter((claim) => isAddressEqual(claim.contract, distributor));
        if (await matchClaims(context, network, ofDistributor, now)) changed = true;
        const last = claims.at(-1);
        // Inclusive next time: a block is read again until a later one appears (matching twice changes nothing).
        if (last !== undefined) fromBlock.set(network.chainId, last.blockNumber);
      }
      if (await confirmPending(context, now)) changed = true;
      await expireRewards(context, now);
      if (changed) wakeWorker(DISPATCHER_NAME);
    },
  };
}

function seenClaimOf(claim: IndexedRewardClaim, head: bigint, network: NetworkConfig): SeenClaim {
  return {
    transactionHash: claim.transactionHash,
    blockNumber: claim.blockNumber,
    recipient: claim.recipient,
    confirmations: confirmationsOf(claim, head),
    required: network.confirmations,
  };
}

async function matchClaims(
  context: AppContext,
  network: NetworkConfig,
  claims: IndexedRewardClaim[],
  now: number,
): Promise<boolean> {
  if (claims.length === 0) return false;
  const rewards = await rewardsByOnchainIds(
    context.store,
    claims.map((claim) => claim.rewardId),
  );
  const head = (await context.indexed.heads()).get(network.chainId)?.blockNumber;
  if (head === undefined) return false;
  let changed = false;
  for (const claim of claims) {
    const reward = rewards.find((candidate) => sameHex(candidate.onchainId, claim.rewardId));
    const expected =
      reward !== undefined &&
      reward.chainId === claim.chainId &&
      isAddressEqual(reward.distributor, claim.contract) &&
      reward.amount === claim.amount;
    if (!expected || reward === undefined) {
      await context.store.transaction().execute((trx) =>
        recordUnknownClaim(trx, {
          claim,
          reason: reward === undefined ? "unknown_reward" : "reward_mismatch",
          rewardId: reward?.id ?? null,
          now,
        }),
      );
      continue;
    }
    if (reward.status === "claimed" || reward.status === "pending") {
      // Already matched; a second claim log of one reward cannot exist (the contract pays once).
      continue;
    }
    if (reward.status !== "voucher_issued") {
      await context.store
        .transaction()
        .execute((trx) => recordUnknownClaim(trx, { claim, reason: `reward_${reward.status}`, rewardId: reward.id, now }));
      continue;
    }
    if (await applyClaim(context, reward, claim, seenClaimOf(claim, head, network), network, now)) changed = true;
  }
  return changed;
}

/** Moves one reward for its claim: `pending` while shallow, `claimed` with `reward.claimed` once deep enough. */
async function applyClaim(
  context: AppContext,
  reward: Reward,
  claim: IndexedRewardClaim,
  seen: SeenClaim,
  network: NetworkConfig,
  now: number,
): Promise<boolean> {
  if (seen.confirmations < seen.required) {
    if (reward.status === "voucher_issued") {
      await context.store.transaction().execute((trx) => moveReward(trx, { reward, transition: "seeClaim", input: seen, now }));
    }
    return false;
  }
  return context.store.transaction().execute(async (trx) => {
    const moved = await moveReward(trx, { reward, transition: "confirmClaim", input: seen, now });
    if (!moved.moved) return false;
    const order = await getOrder(trx, reward.orderId);
    await recordEvent(trx, {
      partnerId: reward.partnerId,
      type: "reward.claimed",
      orderingKey: reward.orderId,
      now,
      data: {
        rewardId: reward.id,
        orderId: reward.orderId,
        externalOrderId: reward.externalOrderId,
        purchaseId: order.purchaseId,
        // The chain's word: the claim paid this wallet (the voucher fixed it).
        recipient: getAddress(claim.recipient),
        amount: reward.amount.toString(),
        transactionHash: claim.transactionHash,
        network: network.name,
        chainId: network.chainId,
        contract: getAddress(claim.contract),
        funder: getAddress(claim.funder),
        blockNumber: claim.blockNumber.toString(),
        claimedAt: new Date(now).toISOString(),
      },
    });
    return true;
  });
}

async function confirmPending(context: AppContext, now: number): Promise<boolean> {
  const waiting = (
    await rewardsAwaitingClaim(context.store, { deadlineAfterSeconds: Math.floor(now / 1000), limit: BATCH })
  ).filter((reward) => reward.status === "pending");
  if (waiting.length === 0) return false;
  const claims = await context.indexed.rewardClaims({ rewardIds: waiting.map((reward) => reward.onchainId) });
  const heads = await context.indexed.heads();
  let changed = false;
  for (const reward of waiting) {
    const network = networkByChainId(context, reward.chainId);
    const head = heads.get(reward.chainId)?.blockNumber;
    if (network === undefined || head === undefined) continue;
    const claim = claims.find(
      (candidate) =>
        candidate.rewardId === reward.onchainId.toLowerCase() &&
        candidate.chainId === reward.chainId &&
        isAddressEqual(candidate.contract, reward.distributor),
    );
    if (claim === undefined) {
      // The claim left the index (a reorg): the voucher is out again until its deadline.
      await context.store.transaction().execute((trx) => moveReward(trx, { reward, transition: "dropClaim", input: {}, now }));
      continue;
    }
    if (await applyClaim(context, reward, claim, seenClaimOf(claim, head, network), network, now)) changed = true;
  }
  return changed;
}

async function expireRewards(context: AppContext, now: number): Promise<void> {
  const due = await rewardsPastWindow(context.store, { now, limit: BATCH });
  for (const reward of due) {
    const indexedSeconds = await indexedSecondsOf(context.indexed, reward.chainId);
    await context.store
      .transaction()
      .execute((trx) => moveReward(trx, { reward, transition: "expire", input: { indexedSeconds, now }, now }));
  }
}
