import type { Kysely } from "kysely";
import { type Address, getAddress, type Hex } from "viem";
import type { IndexedRewardClaim } from "../indexed/indexed-chain.js";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { RewardUnknownClaimTable } from "../store/reward-tables.js";

/**
 * Claims the distributor paid that match no reward expecting one: the only module
 * that reads or writes `reward_unknown_claim`. Never dropped: the admin lists them.
 */
export type UnknownRewardClaim = {
  chainId: number;
  transactionHash: Hex;
  logIndex: number;
  contract: Address;
  onchainId: Hex;
  funder: Address;
  recipient: Address;
  token: Address;
  amount: bigint;
  blockNumber: bigint;
  /** `unknown_reward`, or `reward_<status>` when the reward it names was not expecting a claim. */
  reason: string;
  rewardId: string | null;
  seenAt: number;
};

function toUnknownClaim(row: RewardUnknownClaimTable): UnknownRewardClaim {
  return {
    chainId: Number(row.chain_id),
    transactionHash: row.transaction_hash as Hex,
    logIndex: Number(row.log_index),
    contract: getAddress(row.contract_address),
    onchainId: row.onchain_id as Hex,
    funder: getAddress(row.funder),
    recipient: getAddress(row.recipient),
    token: getAddress(row.token_address),
    amount: BigInt(row.amount),
    blockNumber: BigInt(row.block_number),
    reason: row.reason,
    rewardId: row.reward_id,
    seenAt: Number(row.seen_at),
  };
}

/** Records a claim once (a rescan of the same log changes nothing). */
export async function recordUnknownClaim(
  trx: Kysely<Database>,
  params: { claim: IndexedRewardClaim; reason: string; rewardId: string | null; now: number },
): Promise<void> {
  assertInTransaction(trx, "reward_unknown_claim");
  const { claim } = params;
  await trx
    .insertInto("reward_unknown_claim")
    .values({
      chain_id: claim.chainId,
      transaction_hash: claim.transactionHash.toLowerCase(),
      log_index: claim.logIndex,
      contract_address: claim.contract.toLowerCase(),
      onchain_id: claim.rewardId.toLowerCase(),
      funder: claim.funder.toLowerCase(),
      recipient: claim.recipient.toLowerCase(),
      token_address: claim.token.toLowerCase(),
      amount: claim.amount.toString(),
      block_number: Number(claim.blockNumber),
      reason: params.reason,
      reward_id: params.rewardId,
      seen_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Newest first, for the admin. */
export async function listUnknownClaims(db: Kysely<Database>, params: { limit: number }): Promise<UnknownRewardClaim[]> {
  const rows = await db
    .selectFrom("reward_unknown_claim")
    .selectAll()
    .orderBy("seen_at", "desc")
    .orderBy("block_number", "desc")
    .limit(params.limit)
    .execute();
  return rows.map(toUnknownClaim);
}
