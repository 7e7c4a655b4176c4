import { getAddress, type Hex, isAddressEqual, TransactionReceiptNotFoundError } from "viem";
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
  recentlyClaimedRewards,
  rewardsAwaitingClaim,
  rewardsByOnchainIds,
  rewardsOwingRevocation,
  rewardsPastWindow,
  type SeenClaim,
} from "./reward-record.js";
import { recordUnknownClaim } from "./unknown-claims.js";

export const REWARD_WORKER_NAME = "reward-claims";
const BATCH = 250;
/** How deep a confirmed claim is still watched for a reorg (as the payment and refund watches). */
const WATCH_BLOCKS = 64n;

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
 * - every `claimed` reward of the last `WATCH_BLOCKS` blocks is looked at again: one
 *   whose claim left the index and the chain (a reorg deeper than the confirmations)
 *   is `voucher_issued` again with `reward.reorged`, since the distributor no longer
 *   counts it as claimed (issue 40);
 * - a reward owing a revocation (its order was fully refunded while its voucher was
 *   out) is revoked once that voucher lapsed unclaimed;
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
      if (await watchClaimed(context, now)) changed = true;
      await revokeOwed(context, now);
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

/** A claimed reward whose claim left the index and the chain goes back to `voucher_issued`, with `reward.reorged`. */
async function watchClaimed(context: AppContext, now: number): Promise<boolean> {
  const heads = await context.indexed.heads();
  let changed = false;
  for (const network of context.networks) {
    const head = heads.get(network.chainId)?.blockNumber;
    if (network.rewardDistributor === undefined || head === undefined) continue;
    const fromBlock = head > WATCH_BLOCKS ? head - WATCH_BLOCKS : 0n;
    const claimed = await recentlyClaimedRewards(context.store, { chainId: network.chainId, fromBlock, limit: BATCH });
    if (claimed.length === 0) continue;
    const indexed = await context.indexed.rewardClaims({
      chainIds: [network.chainId],
      rewardIds: claimed.map((reward) => reward.onchainId),
    });
    for (const reward of claimed) {
      const stillIndexed = indexed.some(
        (claim) => sameHex(claim.rewardId, reward.onchainId) && isAddressEqual(claim.contract, reward.distributor),
      );
      if (stillIndexed || reward.transactionHash === null) continue;
      // The index may be between removing a reorged block and adding its replacement: the chain decides.
      if (await claimStillOnChain(context, reward.chainId, reward.transactionHash)) continue;
      const moved = await context.store.transaction().execute(async (trx) => {
        const move = await moveReward(trx, { reward, transition: "reorgClaim", input: {}, now });
        if (!move.moved) return false;
        const order = await getOrder(trx, reward.orderId);
        await recordEvent(trx, {
          partnerId: reward.partnerId,
          type: "reward.reorged",
          orderingKey: reward.orderId,
          now,
          data: {
            rewardId: reward.id,
            orderId: reward.orderId,
            externalOrderId: reward.externalOrderId,
            purchaseId: order.purchaseId,
            status: move.reward.status,
            amount: reward.amount.toString(),
            transactionHash: reward.transactionHash as Hex,
            network: network.name,
            chainId: network.chainId,
          },
        });
        return true;
      });
      if (moved) changed = true;
    }
  }
  return changed;
}

async function claimStillOnChain(context: AppContext, chainId: number, hash: Hex): Promise<boolean> {
  const client = context.rpc.get(chainId);
  if (client === undefined) return true;
  const receipt = await client
    .getTransactionReceipt({ hash })
    .catch((error: unknown) => (error instanceof TransactionReceiptNotFoundError ? null : Promise.reject(error)));
  return receipt !== null && receipt.status === "success";
}

/** Rewards owing a revocation (order fully refunded with a voucher out) are revoked once the voucher lapsed. */
async function revokeOwed(context: AppContext, now: number): Promise<void> {
  for (const reward of await rewardsOwingRevocation(context.store, { limit: BATCH })) {
    const indexedSeconds = await indexedSecondsOf(context.indexed, reward.chainId);
    if (reward.voucherDeadlineSeconds !== null && reward.voucherDeadlineSeconds >= indexedSeconds) continue;
    await context.store.transaction().execute((trx) =>
      moveReward(trx, {
        reward,
        transition: "revoke",
        input: { indexedSeconds, reason: reward.revocationDue ?? "order_refunded" },
        now,
      }),
    );
  }
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
