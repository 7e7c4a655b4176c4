import type { Kysely } from "kysely";
import { type Address, getAddress } from "viem";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { RewardSettingsTable } from "../store/reward-tables.js";

/**
 * A partner's reward settings: the only module that reads or writes
 * `reward_settings`. No row reads as "no funding address, no cashback".
 */
export type RewardSettings = {
  partnerId: string;
  /** The partner's own wallet the rewards are paid from (it approves the distributor). */
  fundingAddress: Address | null;
  /** Automatic cashback at settlement, in basis points of the amount paid (0: none). */
  cashbackBps: number;
  updatedAt: number | null;
};

function toRewardSettings(row: RewardSettingsTable): RewardSettings {
  return {
    partnerId: row.partner_id,
    fundingAddress: row.funding_address === null ? null : getAddress(row.funding_address),
    cashbackBps: Number(row.cashback_bps),
    updatedAt: Number(row.updated_at),
  };
}

export async function rewardSettingsOf(db: Kysely<Database>, partnerId: string): Promise<RewardSettings> {
  const row = await db.selectFrom("reward_settings").selectAll().where("partner_id", "=", partnerId).executeTakeFirst();
  return row === undefined ? { partnerId, fundingAddress: null, cashbackBps: 0, updatedAt: null } : toRewardSettings(row);
}

/** A partial update: a field left undefined keeps its value. */
export async function updateRewardSettings(
  trx: Kysely<Database>,
  params: { partnerId: string; fundingAddress?: Address; cashbackBps?: number; now: number },
): Promise<RewardSettings> {
  assertInTransaction(trx, "reward settings");
  const current = await rewardSettingsOf(trx, params.partnerId);
  const next = {
    funding_address: (params.fundingAddress ?? current.fundingAddress)?.toLowerCase() ?? null,
    cashback_bps: params.cashbackBps ?? current.cashbackBps,
    updated_at: params.now,
  };
  await trx
    .insertInto("reward_settings")
    .values({ partner_id: params.partnerId, ...next, created_at: params.now })
    .onConflict((oc) => oc.column("partner_id").doUpdateSet(next))
    .execute();
  return rewardSettingsOf(trx, params.partnerId);
}
