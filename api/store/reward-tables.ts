/**
 * Tables of rewards (migration 0015, docs/rewards.md). Same conventions as
 * `database.ts`: addresses and hashes lower-case hex, money as decimal strings of
 * USDC base units, instants as integer milliseconds since epoch.
 */
export interface RewardTables {
  reward_settings: RewardSettingsTable;
  reward: RewardTable;
  reward_unknown_claim: RewardUnknownClaimTable;
}

export type RewardStatus = "granted" | "voucher_issued" | "pending" | "claimed" | "revoked" | "expired";

export interface RewardSettingsTable {
  partner_id: string;
  funding_address: string | null;
  cashback_bps: number;
  created_at: number;
  updated_at: number;
}

export interface RewardTable {
  id: string;
  /** keccak256 of `id`, as the distributor and its `RewardClaimed` events name the reward. */
  onchain_id: string;
  partner_id: string;
  order_id: string;
  external_order_id: string;
  /** `grant` (POST /v1/orders/:id/rewards) or `cashback` (automatic at settlement). */
  source: string;
  idempotency_key: string | null;
  status: RewardStatus;
  chain_id: number;
  distributor_address: string;
  token_address: string;
  amount: string;
  /** The funding address the latest voucher names (fixed when the voucher is issued). */
  funder: string | null;
  recipient: string | null;
  /** Unix seconds, as the contract reads it. */
  voucher_deadline: number | null;
  transaction_hash: string | null;
  block_number: number | null;
  claimed_at: number | null;
  revoked_reason: string | null;
  expires_at: number;
  created_at: number;
  updated_at: number;
}

export interface RewardUnknownClaimTable {
  chain_id: number;
  transaction_hash: string;
  log_index: number;
  contract_address: string;
  onchain_id: string;
  funder: string;
  recipient: string;
  token_address: string;
  amount: string;
  block_number: number;
  /** `unknown_reward`, or `reward_<status>` for a claim of a reward that was not expecting one. */
  reason: string;
  reward_id: string | null;
  seen_at: number;
}
