import type { Kysely } from "kysely";
import type { AppContext } from "../app-context.js";
import { type ProblemError, problem } from "../http/problem.js";
import type { IndexedChain } from "../indexed/indexed-chain.js";
import type { Database } from "../store/database.js";
import { findPartnerReward, moveReward, oweRevocation, type Reward, rewardsOfOrders } from "./reward-record.js";

/** The newest block time the index processed on a chain, in unix seconds (0 when it has none yet). */
export async function indexedSecondsOf(indexed: Pick<IndexedChain, "heads">, chainId: number): Promise<bigint> {
  return (await indexed.heads()).get(chainId)?.blockTimestamp ?? 0n;
}

function notRevocable(reward: Reward, indexedSeconds: bigint): ProblemError {
  const reason =
    reward.status === "pending" ? "claim_pending" : reward.status === "voucher_issued" ? "voucher_out" : reward.status;
  const retryAfter =
    reason === "voucher_out" && reward.voucherDeadlineSeconds !== null
      ? new Date(Number(reward.voucherDeadlineSeconds + 1n) * 1000).toISOString()
      : undefined;
  return problem(
    "reward_not_revocable",
    reason === "voucher_out"
      ? `A voucher of this reward is out until ${retryAfter}; it can be revoked once the index is past that (now at ${new Date(Number(indexedSeconds) * 1000).toISOString()}).`
      : `The reward is ${reward.status}.`,
    { reason, ...(retryAfter === undefined ? {} : { retryAfter }) },
  );
}

/** `POST /v1/rewards/:id/revoke`: the partner withdraws a reward not (being) paid. */
export async function revokeReward(
  context: AppContext,
  params: { partnerId: string; rewardId: string; reason?: string; now?: number },
): Promise<Reward> {
  const now = params.now ?? Date.now();
  const reward = await findPartnerReward(context.store, { partnerId: params.partnerId, id: params.rewardId });
  if (reward === undefined) throw problem("not_found", `Reward ${params.rewardId} was not found`);
  const indexedSeconds = await indexedSecondsOf(context.indexed, reward.chainId);
  if (reward.status !== "granted" && reward.status !== "voucher_issued") throw notRevocable(reward, indexedSeconds);
  const moved = await context.store.transaction().execute((trx) =>
    moveReward(trx, {
      reward,
      transition: "revoke",
      input: { indexedSeconds, reason: params.reason ?? "revoked_by_partner" },
      now,
    }),
  );
  if (!moved.moved) {
    const current = (await findPartnerReward(context.store, { partnerId: params.partnerId, id: params.rewardId })) as Reward;
    throw notRevocable(current, indexedSeconds);
  }
  return moved.reward;
}

/**
 * Revokes every reward of an order that nothing is paying yet, inside the caller's
 * transaction (a full refund of the order calls it, with the refund's own change).
 * A reward whose voucher is still out (or whose claim is being confirmed) cannot be
 * revoked before its deadline: it is listed in `notRevoked` and marked as owing the
 * revocation (`oweRevocation`), so no new voucher is issued for it and the
 * reward-claims worker revokes it once the voucher lapses unclaimed (issue 40: it
 * used to stay claimable by a new voucher after the deadline).
 * `indexedSeconds` defaults to 0, which treats every issued voucher as still out.
 */
export async function revokeUnclaimedRewardsOfOrder(
  tx: Kysely<Database>,
  params: { orderId: string; reason: string; now?: number; indexedSeconds?: bigint },
): Promise<{ revoked: Reward[]; notRevoked: Reward[] }> {
  const now = params.now ?? Date.now();
  const revoked: Reward[] = [];
  const notRevoked: Reward[] = [];
  for (const reward of await rewardsOfOrders(tx, [params.orderId])) {
    if (reward.status !== "granted" && reward.status !== "voucher_issued") {
      if (reward.status === "pending") notRevoked.push(reward);
      continue;
    }
    const moved = await moveReward(tx, {
      reward,
      transition: "revoke",
      input: { indexedSeconds: params.indexedSeconds ?? 0n, reason: params.reason },
      now,
    });
    if (moved.moved) revoked.push(moved.reward);
    else notRevoked.push(reward);
  }
  await oweRevocation(tx, { rewardIds: notRevoked.map((reward) => reward.id), reason: params.reason, now });
  return { revoked, notRevoked };
}
