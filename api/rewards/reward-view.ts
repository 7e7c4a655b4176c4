import type { Reward } from "./reward-record.js";

/** A reward on the wire (SPEC 16): money as a decimal string, instants as ISO 8601. */
export function rewardView(reward: Reward) {
  return {
    id: reward.id,
    status: reward.status,
    orderId: reward.orderId,
    externalOrderId: reward.externalOrderId,
    amount: reward.amount.toString(),
    recipient: reward.recipient,
    transactionHash: reward.transactionHash,
    expiresAt: new Date(reward.expiresAt).toISOString(),
    source: reward.source,
    chainId: reward.chainId,
    voucherDeadline:
      reward.voucherDeadlineSeconds === null ? null : new Date(Number(reward.voucherDeadlineSeconds) * 1000).toISOString(),
    revokedReason: reward.revokedReason,
    claimedAt: reward.claimedAt === null ? null : new Date(reward.claimedAt).toISOString(),
    createdAt: new Date(reward.createdAt).toISOString(),
  };
}
