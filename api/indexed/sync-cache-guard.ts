import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { NetworkConfig } from "../config/networks.js";
import { redactSecrets } from "../logging/redact.js";
import { sameHex } from "../values/checksum-address.js";

/**
 * Ponder's RPC cache (schema `ponder_sync` in the index database) holds the blocks and logs
 * of the ranges it synced, and what it calls "synced" is trusted for good: a restart with the
 * same configuration reads those ranges from the cache and never from the node again. That
 * is only sound while the node still has the chain the cache was filled from. A local Anvil
 * chain can be thrown away and rebuilt under the same chain id (a new `anvil`, a state file
 * restored from before the last blocks), and a fork's blocks vanish with its Anvil.
 *
 * Before the indexer starts, per chain: the newest block the cache holds must be on the
 * node's chain with the same hash, and the node's head must not be below the highest block
 * the cache says it synced. Otherwise the chain's cached rows are deleted and the index
 * schema (built from the same stale data) is dropped, so Ponder indexes afresh from the node.
 * One `eth_getBlockByNumber` and one `eth_blockNumber` per chain.
 */
export type SyncCacheVerdict =
  | { chainId: number; state: "empty" }
  | { chainId: number; state: "valid"; newestBlock: number; syncedTo: number }
  | { chainId: number; state: "stale"; reason: string };

/**
 * A file in an embedded index directory that was copied from an empty index (the local
 * stack's `emptyIndexTemplate`), until its first start: Ponder never wrote a cache there,
 * so the guard has nothing to check and does not open the database (opening PGlite costs
 * about a second of CPU, once more than Ponder's own open). The guard removes the file.
 */
export const NEW_INDEX_MARKER = "settlement-new-index";

/** The few statements the guard needs, over PGlite or a Postgres client. */
type Sql = {
  query: <Row>(text: string, params?: unknown[]) => Promise<Row[]>;
  close: () => Promise<void>;
};

const SYNC_SCHEMA = "ponder_sync";
/** Every `ponder_sync` table with a `chain_id` column (Ponder 0.16's sync-store schema). */
const CHAIN_TABLES = [
  "blocks",
  "transactions",
  "transaction_receipts",
  "logs",
  "traces",
  "rpc_request_results",
  "intervals",
  "factory_addresses",
];

export async function guardSyncCache(params: {
  networks: Pick<NetworkConfig, "name" | "chainId" | "rpcUrl">[];
  /** Postgres index (DATABASE_URL); otherwise the PGlite directory. */
  databaseUrl?: string;
  pgliteDirectory: string;
  indexSchema: string;
  log?: (entry: Record<string, unknown>) => void;
}): Promise<SyncCacheVerdict[]> {
  if (params.networks.length === 0) return [];
  if (params.databaseUrl === undefined && !existsSync(params.pgliteDirectory)) return [];
  const newIndexMarker = join(params.pgliteDirectory, NEW_INDEX_MARKER);
  if (params.databaseUrl === undefined && existsSync(newIndexMarker)) {
    rmSync(newIndexMarker);
    return [];
  }
  const sql = await openSql(params);
  try {
    const present = await sql.query<{ present: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'blocks') AS present",
      [SYNC_SCHEMA],
    );
    if (present[0]?.present !== true) return [];
    const verdicts: SyncCacheVerdict[] = [];
    for (const network of params.networks) {
      const verdict = await verdictOf(sql, network);
      verdicts.push(verdict);
      if (verdict.state !== "stale") continue;
      params.log?.({
        level: "warn",
        msg: "Ponder's RPC cache describes another chain than the node's; deleting it and the index for this chain",
        network: network.name,
        chainId: network.chainId,
        reason: verdict.reason,
      });
      for (const table of CHAIN_TABLES) {
        if (await tableExists(sql, table))
          await sql.query(`DELETE FROM "${SYNC_SCHEMA}"."${table}" WHERE chain_id = $1`, [network.chainId]);
      }
      await sql.query(`DROP SCHEMA IF EXISTS "${params.indexSchema}" CASCADE`);
      await sql.query(`CREATE SCHEMA "${params.indexSchema}"`);
    }
    return verdicts;
  } finally {
    await sql.close();
  }
}

async function verdictOf(sql: Sql, network: Pick<NetworkConfig, "chainId" | "rpcUrl">): Promise<SyncCacheVerdict> {
  const { chainId } = network;
  const newest = await sql.query<{ number: string; hash: string }>(
    `SELECT number::text AS number, hash FROM "${SYNC_SCHEMA}".blocks WHERE chain_id = $1 ORDER BY number DESC LIMIT 1`,
    [chainId],
  );
  // Ranges are stored as [from, to + 1]: the last block synced is the upper bound minus one.
  const synced = (await tableExists(sql, "intervals"))
    ? await sql.query<{ upper: string | null }>(
        `SELECT max(upper(blocks))::text AS upper FROM "${SYNC_SCHEMA}".intervals WHERE chain_id = $1`,
        [chainId],
      )
    : [];
  const syncedTo = synced[0]?.upper == null ? undefined : Math.floor(Number(synced[0].upper)) - 1;
  const row = newest[0];
  if (row === undefined && syncedTo === undefined) return { chainId, state: "empty" };
  const head = Number(BigInt((await rpc(network.rpcUrl, "eth_blockNumber", [])) as string));
  if (syncedTo !== undefined && head < syncedTo) {
    return {
      chainId,
      state: "stale",
      reason: `the node's head ${head} is below block ${syncedTo}, which the cache says it synced`,
    };
  }
  if (row !== undefined) {
    const number = Number(row.number);
    const block = (await rpc(network.rpcUrl, "eth_getBlockByNumber", [`0x${number.toString(16)}`, false])) as {
      hash?: string;
    } | null;
    if (block?.hash === undefined) return { chainId, state: "stale", reason: `the node has no block ${number}` };
    if (!sameHex(block.hash, row.hash)) {
      return { chainId, state: "stale", reason: `block ${number} is ${block.hash} on the node, ${row.hash} in the cache` };
    }
    return { chainId, state: "valid", newestBlock: number, syncedTo: syncedTo ?? number };
  }
  return { chainId, state: "valid", newestBlock: -1, syncedTo: syncedTo ?? -1 };
}

async function tableExists(sql: Sql, table: string): Promise<boolean> {
  const rows = await sql.query<{ present: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2) AS present",
    [SYNC_SCHEMA, table],
  );
  return rows[0]?.present === true;
}

/**
 * One JSON-RPC call, tried up to 4 times over about 2 s: a pooled connection the node (or a
 * proxy) closed meanwhile fails once with "fetch failed". A node that stays silent stops
 * the start, as the chain-id check does: a cache that cannot be checked is not trusted.
 */
async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 4; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        signal: AbortSignal.timeout(5_000),
      });
      const body = (await response.json()) as { result?: unknown; error?: { message?: string } };
      if (body.error !== undefined) throw new Error(body.error.message ?? "JSON-RPC error");
      return body.result;
    } catch (error) {
      lastError = error as Error;
    }
  }
  throw new Error(`${method} failed while checking Ponder's RPC cache: ${redactSecrets(lastError?.message ?? "no answer")}`);
}

async function openSql(params: { databaseUrl?: string; pgliteDirectory: string }): Promise<Sql> {
  if (params.databaseUrl !== undefined) {
    const { default: pg } = await import("pg");
    const client = new pg.Client(params.databaseUrl);
    await client.connect();
    return {
      query: async <Row>(text: string, values?: unknown[]) => (await client.query(text, values)).rows as Row[],
      close: () => client.end(),
    };
  }
  const database = new PGlite(params.pgliteDirectory);
  return {
    query: async <Row>(text: string, values?: unknown[]) => (await database.query<Row>(text, values)).rows,
    close: () => database.close(),
  };
}
