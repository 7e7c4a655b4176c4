/** Tables of migration 0014 (accounting, docs/accounting.md). Same conventions as `database.ts`. */
export interface AccountingTables {
  auditor_key: AuditorKeyTable;
  opening_balance: OpeningBalanceTable;
  reconciliation_check: ReconciliationCheckTable;
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
