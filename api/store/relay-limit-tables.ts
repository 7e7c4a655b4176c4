/**
 * Tables of migration 0012 (issue 24): the relayer's charges, one row per relayed
 * transaction, counted against per-partner and per-session quotas and the partner's
 * daily gas budget. Same conventions as `database.ts`: wei as decimal strings,
 * hashes lower-case hex, instants as integer milliseconds since epoch.
 */
export interface RelayLimitTables {
  relayer_charge: RelayerChargeTable;
}

/** What the relayer was asked to pay for: gasless payments, refunds, reward claims and subscriptions (registrations and charges) share the same limits. */
export type RelayPurpose = "payment" | "refund" | "reward" | "subscription";

export interface RelayerChargeTable {
  id: string;
  /** The partner whose customers (or operations) the gas was spent for. */
  partner_id: string;
  chain_id: number;
  purpose: RelayPurpose;
  /** What the call was for (a checkout session for payments), counted by the per-session quota. */
  subject_id: string | null;
  /** UTC day `YYYY-MM-DD` of the send: quotas and budget are per day. */
  day: string;
  /** The first transaction sent (a replacement keeps the charge). */
  transaction_hash: string;
  /** gas limit × max fee per gas at the send: the most the transaction may cost, counted until it is mined. */
  reserved_wei: string;
  /** gas used × effective price once mined (or reverted): what it cost. */
  gas_cost_wei: string | null;
  created_at: number;
  updated_at: number;
}
