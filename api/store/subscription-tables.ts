/**
 * Tables of subscriptions (migration 0021, docs/subscriptions.md). Same conventions as
 * `database.ts`: addresses and hashes lower-case hex, money as decimal strings of USDC
 * base units, instants as integer milliseconds since epoch; on-chain times (`terms_*`,
 * `period_seconds`) are Unix seconds as the contract reads them.
 */
export interface SubscriptionTables {
  subscription: SubscriptionTable;
  subscription_charge: SubscriptionChargeTable;
  subscription_settings: SubscriptionSettingsTable;
}

/** A partner's retry schedule (migration 0022); no row: the default one. */
export interface SubscriptionSettingsTable {
  partner_id: string;
  /** JSON array of delays in seconds of chain time, one per retry. */
  retry_delays_json: string;
  updated_at: number;
}

export type SubscriptionStatus = "awaiting_authorization" | "active" | "past_due" | "cancelled" | "ended" | "expired";
export type SubscriptionChargeStatus = "due" | "pending" | "paid" | "failed";
export type SubscriptionCancelledBy = "customer" | "partner" | "retries_exhausted";
export type ChargeFailureReason = "insufficient_balance" | "insufficient_allowance" | "cancelled_on_chain" | "reverted";

export interface SubscriptionTable {
  /** `sub_…`; keccak256 of it is the terms' salt. */
  id: string;
  partner_id: string;
  external_customer_id: string;
  product_name: string;
  amount: string;
  /** `day`, `week`, `month`, `year`, or `custom` (a number of seconds, at least 3600). */
  interval: string;
  period_seconds: number;
  /** What the partner asked for (epoch ms), before the terms fix the chain's own times. */
  start_at: number | null;
  end_at: number | null;
  /** JSON object, as the partner sent it. */
  metadata: string | null;
  success_url: string | null;
  cancel_url: string | null;
  idempotency_key: string | null;
  /** SHA-256 hex of the customer's client token (shown once, never stored). */
  client_token_hash: string;
  status: SubscriptionStatus;
  chain_id: number;
  manager_address: string;
  token_address: string;
  /** The partner's payment address every charge goes to. */
  payee: string;
  /** Set with the terms, once the customer's wallet is known. */
  subscriber: string | null;
  /** The terms' EIP-712 hash, as the manager and its events name the subscription. */
  onchain_id: string | null;
  terms_start: number | null;
  terms_end: number | null;
  permit_value: string | null;
  authorization_transaction_hash: string | null;
  activated_at: number | null;
  /** 1: the partner cancelled at the end of the current period (SQLite has no boolean). */
  cancel_at_period_end: number;
  cancelled_by: SubscriptionCancelledBy | null;
  cancelled_at: number | null;
  ended_at: number | null;
  /** `awaiting_authorization` expires here (24 h after creation). */
  expires_at: number;
  created_at: number;
  updated_at: number;
}

export interface SubscriptionChargeTable {
  /** `sch_…` */
  id: string;
  subscription_id: string;
  partner_id: string;
  /** `(chain time - start) / period`, as `charge(id)` computes it. */
  period_index: number;
  amount: string;
  status: SubscriptionChargeStatus;
  due_at: number;
  /** How many times `charge` was tried for this period. */
  attempts: number;
  failure_reason: ChargeFailureReason | null;
  next_retry_at: number | null;
  /** The order the paid charge created (ledger kind `subscription_charge`). */
  order_id: string | null;
  transaction_hash: string | null;
  log_index: number | null;
  block_number: number | null;
  paid_at: number | null;
  created_at: number;
  updated_at: number;
}
