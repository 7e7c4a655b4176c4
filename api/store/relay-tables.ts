/**
 * Tables of gasless payment (EIP-3009, migration 0011). Same conventions as
 * `database.ts`: addresses and hashes lower-case hex, money and wei as decimal
 * strings, instants as integer milliseconds since epoch.
 */
export interface RelayTables {
  relayed_authorization: RelayedAuthorizationTable;
  relayer_lease: RelayerLeaseTable;
}

/**
 * `queued`: stored, not yet sent; `submitted`: sent, no receipt yet; `mined`: included and
 * succeeded; `failed`: never sent, dropped or reverted (`failure_code` says which).
 */
export type RelayStatus = "queued" | "submitted" | "mined" | "failed";

export interface RelayedAuthorizationTable {
  id: string;
  session_id: string;
  /**
   * The session's id while this authorization is live (queued, submitted or mined);
   * null once it failed. Unique, so a session has at most one live authorization
   * (several NULLs are allowed in both SQLite and Postgres).
   */
  live_session_id: string | null;
  chain_id: number;
  token_address: string;
  from_address: string;
  to_address: string;
  value: string;
  valid_after: string;
  valid_before: string;
  /** bytes32 hex; (chain, token, from, nonce) is unique: one authorization is submitted at most once. */
  nonce: string;
  signature: string;
  status: RelayStatus;
  relayer_address: string | null;
  relayer_nonce: number | null;
  /** The latest transaction carrying it; `transaction_hashes` lists every one sent (replacements). */
  transaction_hash: string | null;
  transaction_hashes: string;
  gas_limit: string | null;
  max_fee_per_gas: string | null;
  max_priority_fee_per_gas: string | null;
  replacements: number;
  submitted_at: number | null;
  gas_used: string | null;
  effective_gas_price: string | null;
  /** gas_used × effective_gas_price, in wei: what relaying this payment cost. */
  gas_cost_wei: string | null;
  block_number: number | null;
  failure_code: string | null;
  failure_detail: string | null;
  created_at: number;
  updated_at: number;
}

/** One row per relayer: which process may send its transactions now, and the next nonce it will use. */
export interface RelayerLeaseTable {
  /** `<chainId>:<relayer address>` */
  id: string;
  holder: string;
  expires_at: number;
  next_nonce: number;
  updated_at: number;
}
