import type { Kysely } from "kysely";
import { type Address, getAddress, type Hex } from "viem";
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
  /**
   * When the funding address proved it is the partner's (its signature over a challenge
   * of this service); null for an address set before proofs existed (issue 40), which
   * pays nothing until proven.
   */
  fundingProvenAt: number | null;
  /** Automatic cashback at settlement, in basis points of the amount paid (0: none). */
  cashbackBps: number;
  updatedAt: number | null;
};

function toRewardSettings(row: RewardSettingsTable): RewardSettings {
  return {
    partnerId: row.partner_id,
    fundingAddress: row.funding_address === null ? null : getAddress(row.funding_address),
    fundingProvenAt: row.funding_proven_at === null ? null : Number(row.funding_proven_at),
    cashbackBps: Number(row.cashback_bps),
    updatedAt: Number(row.updated_at),
  };
}

export async function rewardSettingsOf(db: Kysely<Database>, partnerId: string): Promise<RewardSettings> {
  const row = await db.selectFrom("reward_settings").selectAll().where("partner_id", "=", partnerId).executeTakeFirst();
  return row === undefined
    ? { partnerId, fundingAddress: null, fundingProvenAt: null, cashbackBps: 0, updatedAt: null }
    : toRewardSettings(row);
}

/** The funding address vouchers may name: only a proven one (issue 40). */
export function provenFunder(settings: RewardSettings): Address | undefined {
  return settings.fundingAddress !== null && settings.fundingProvenAt !== null ? settings.fundingAddress : undefined;
}

/** The partner that holds `address` as its proven funding address, if any. */
export async function partnerHoldingFunder(db: Kysely<Database>, address: Address): Promise<string | undefined> {
  const row = await db
    .selectFrom("reward_settings")
    .select("partner_id")
    .where("funding_address", "=", address.toLowerCase())
    .where("funding_proven_at", "is not", null)
    .executeTakeFirst();
  return row?.partner_id;
}

/**
 * A partial update: a field left undefined keeps its value. A new funding address
 * comes only with its proof (checked by the caller), stored beside it. The store's
 * unique index over proven funding addresses refuses a second partner (the write
 * throws; `writeRewardSettings` answers `funding_address_taken`).
 */
export async function updateRewardSettings(
  trx: Kysely<Database>,
  params: {
    partnerId: string;
    funding?: { address: Address; message: string; signature: Hex };
    cashbackBps?: number;
    now: number;
  },
): Promise<RewardSettings> {
  assertInTransaction(trx, "reward settings");
  const current = await rewardSettingsOf(trx, params.partnerId);
  const next = {
    cashback_bps: params.cashbackBps ?? current.cashbackBps,
    updated_at: params.now,
    ...(params.funding === undefined
      ? {}
      : {
          funding_address: params.funding.address.toLowerCase(),
          funding_proven_at: params.now,
          funding_proof_message: params.funding.message,
          funding_proof_signature: params.funding.signature.toLowerCase(),
        }),
  };
  await trx
    .insertInto("reward_settings")
    .values({
      partner_id: params.partnerId,
      funding_address: null,
      funding_proven_at: null,
      funding_proof_message: null,
      funding_proof_signature: null,
      ...next,
      created_at: params.now,
    })
    .onConflict((oc) => oc.column("partner_id").doUpdateSet(next))
    .execute();
  return rewardSettingsOf(trx, params.partnerId);
}
