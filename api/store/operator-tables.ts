/** Tables of migration 0009 (operating the service). Same conventions as `database.ts`. */
export interface OperatorTables {
  indexer_start: IndexerStartTable;
}

export interface IndexerStartTable {
  /** The index's Postgres schema (`DATABASE_SCHEMA`, default `public`). */
  index_schema: string;
  config_hash: string;
  /** `{ "<network>": ["0x…lower-case", …] }`: the payment addresses it watches. */
  watched_json: string;
  started_at: number;
}
