/**
 * Tables of rewards (migration 0015, docs/rewards.md). Same conventions as
 * `database.ts`: addresses and hashes lower-case hex, money as decimal strings of
 * USDC base units, instants as integer milliseconds since epoch.
 */
export interface RewardTables {
  reward_settings: RewardSettingsTable;
  reward: RewardTable;
  reward_unknown_claim: RewardUnknownClaimTable;
  reward_funding_challenge: RewardFundingChallengeTable;
}

export type RewardStatus = "granted" | "voucher_issued" | "pending" | "claimed" | "revoked" | "expired";

export interface RewardSettingsTable {
  partner_id: string;
  funding_address: string | null;
  cashback_bps: number;
  /** When the funding address's signature over a challenge was accepted (migration 0017); null: unproven. */
  funding_proven_at: number | null;
  /** The challenge text the funding address signed, and its signature (the proof, kept). */
  funding_proof_message: string | null;
  funding_proof_signature: string | null;
  created_at: number;
  updated_at: number;
}

/** A challenge a funding address signs to prove it is the partner's (single use, short-lived). */
export interface RewardFundingChallengeTable {
  /** 128 random bits, hex. */
  nonce: string;
  partner_id: string;
  funding_address: string;
  chain_id: number;
  /** The exact text issued; only this string is accepted back. */
  message: string;
  issued_at: number;
  expires_at: number;
  consumed_at: number | null;
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
  /** A revocation owed once the voucher out lapses (its order was fully refunded meanwhile); migration 0017. */
  revocation_due: string | null;
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
