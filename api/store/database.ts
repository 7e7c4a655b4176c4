/**
 * Our own state (everything that is not an indexed chain fact), one type per table.
 * Portable between SQLite and Postgres: ids and money are text (money as a canonical
 * decimal string of USDC base units), instants are integer milliseconds since epoch.
 */
export interface Database {
  partner: PartnerTable;
  api_key: ApiKeyTable;
  payment_address: PaymentAddressTable;
  worker_heartbeat: WorkerHeartbeatTable;
}

export interface PartnerTable {
  id: string;
  name: string;
  created_at: number;
}

export interface ApiKeyTable {
  id: string;
  partner_id: string;
  /** SHA-256 of the whole key, hex. The key itself is shown once and never stored. */
  key_hash: string;
  /** First characters of the key, so a partner can tell keys apart. */
  key_prefix: string;
  created_at: number;
  revoked_at: number | null;
}

export interface PaymentAddressTable {
  id: string;
  partner_id: string;
  network: string;
  chain_id: number;
  /** Lower-case hex, the form the index stores. */
  address: string;
  created_at: number;
}

export interface WorkerHeartbeatTable {
  /** `<worker name>:<process id>` */
  id: string;
  worker: string;
  beat_at: number;
}
