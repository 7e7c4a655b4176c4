/** Tables of migration 0014 (accounting, docs/accounting.md). Same conventions as `database.ts`. */
export interface AccountingTables {
  auditor_key: AuditorKeyTable;
  opening_balance: OpeningBalanceTable;
  reconciliation_check: ReconciliationCheckTable;
  closed_period: ClosedPeriodTable;
  closed_period_guard: ClosedPeriodGuardTable;
  period_adjustment: PeriodAdjustmentTable;
}

/** A partner's closed period (migration 0020): what was served at closing, kept as served. */
export interface ClosedPeriodTable {
  id: string;
  partner_id: string;
  chain_id: number;
  from_block: number | string;
  to_block: number | string;
  /** The range's instants (epoch ms): `from` inclusive, `to` exclusive. */
  from_time: number | string;
  to_time: number | string;
  closed_at: number | string;
  /** SHA-256 (hex) of `ledger_csv`'s UTF-8 bytes. */
  digest: string;
  /** The ledger CSV exactly as served at closing. */
  ledger_csv: string;
  /** The reconciliation's JSON answer at closing. */
  reconciliation_json: string;
  /** The entries at closing, `[transactionHash, logIndex, paymentAddress, kind, value, blockHash]` each, for later comparison. */
  entries_json: string;
}

/** One row per partner and chain, updated by every closing: it serialises them (the overlap check then sees the last). */
export interface ClosedPeriodGuardTable {
  partner_id: string;
  chain_id: number;
  closings: number;
}

/** A later fact touching a closed period (migration 0020). */
export interface PeriodAdjustmentTable {
  period_id: string;
  /** `added` (late-indexed, or mined into the range by a reorg), `removed` (reorged away), `moved` (mined again in another block of the range), `reclassified`. */
  change: string;
  chain_id: number;
  transaction_hash: string;
  log_index: number;
  payment_address: string;
  /** The entry's ledger kind now (`removed`: at closing). */
  entry_kind: string;
  value: string;
  /** Signed base units: what it changes of the address's balance at the end of the closed period. */
  balance_effect: string;
  detected_at: number | string;
  /** The indexed head when it was found: the adjustment belongs to the period holding this block. */
  detected_block: number | string;
  /** The transfer's evidence (migration 0022; null on adjustments found before it): its block now, or at closing when `removed`. */
  block_number: number | string | null;
  block_hash: string | null;
  /** The block's timestamp, seconds. */
  block_time: number | string | null;
  from_address: string | null;
  to_address: string | null;
  /** 0: money out of `payment_address`; 1: money in. */
  leg: number | null;
}

/** A platform auditor's key: reads every partner (each GET narrows with `partnerId=`), writes nothing. */
export interface AuditorKeyTable {
  id: string;
  /** SHA-256 of the whole key, hex; the key is shown once. */
  key_hash: string;
  key_prefix: string;
  label: string | null;
  created_at: number;
  revoked_at: number | null;
}

/** A payment address's USDC balance at the end of the block before the indexer's start block, read once from the chain. */
export interface OpeningBalanceTable {
  chain_id: number;
  /** Lower-case hex. */
  address: string;
  token_address: string;
  /** The block it was read at (start block − 1). */
  block_number: number;
  balance: string;
  read_at: number;
}

/** The latest check of one payment address: the index's balance against the chain's, at the indexed head. */
export interface ReconciliationCheckTable {
  chain_id: number;
  address: string;
  partner_id: string | null;
  block_number: number;
  computed_balance: string;
  chain_balance: string;
  difference: string;
  /** 1 or 0. */
  reconciled: number;
  checked_at: number;
}
