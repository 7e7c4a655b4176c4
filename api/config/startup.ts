import { createHash } from "node:crypto";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { type Address, getAddress } from "viem";
import { guardSyncCache } from "../indexed/sync-cache-guard.js";
import { redactSecrets } from "../logging/redact.js";
import { migrateStore, openStore, type Store } from "../store/open-store.js";
import { ConfigError, productionProfileProblems, readConfig, type ServiceConfig } from "./config.js";
import { envPrefix, type NetworkConfig } from "./networks.js";

/**
 * What a process does with the configuration: the indexer (`ponder start`) records
 * the addresses it watches; an API replica (`ponder serve`) settles on exactly those;
 * a check (`npx settlement config check`) changes nothing.
 */
export type StartRole = "indexer" | "replica" | "check";

/** The RPC's `eth_chainId` must answer within this long at start. */
const CHAIN_ID_TIMEOUT_MS = 3_000;

/**
 * Reads and validates the whole configuration once, before the indexer starts:
 * the environment (`readConfig`), each RPC URL's chain id, and the store's payment
 * addresses, which join those of the environment as the watched set. Every problem
 * is listed in one `ConfigError`.
 */
export async function prepareStart(
  env: NodeJS.ProcessEnv,
  role: StartRole,
  options: { indexSchema?: string } = {},
): Promise<ServiceConfig> {
  const { config, problems } = readConfig(env);
  if (options.indexSchema !== undefined) config.databaseSchema = options.indexSchema;
  // The production profile (docs/deploy.md): a process of a Base service starts on Postgres only.
  problems.push(...productionProfileProblems(config));
  if (role === "indexer") recoverInterruptedFirstStart(config);
  const [chainProblems, storeResult] = await Promise.all([
    checkChainIds(config.networks),
    problems.some((problem) => problem.startsWith("STORE_URL"))
      ? undefined
      : watchedFromStore(config, role).then(
          () => "read" as const,
          (error) => error as Error,
        ),
  ]);
  problems.push(...chainProblems);
  if (storeResult instanceof Error) {
    problems.push(
      `the store (${config.storeUrl === undefined ? `${config.dataDir}/app.sqlite` : "STORE_URL"}) cannot be read: ${storeResult.message}`,
    );
  }
  for (const network of config.networks) {
    if (network.paymentAddresses.length === 0 && storeResult === "read") {
      problems.push(
        `No payment address for network "${network.name}": add one with \`npx settlement payment-address add\` or set ${envPrefix(network.name)}PAYMENT_ADDRESSES (comma-separated)`,
      );
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  if (role === "indexer") {
    await guardSyncCache({
      networks: config.networks.filter((network) => indexerCacheEnabled(network, config)),
      databaseUrl: config.databaseUrl,
      pgliteDirectory: pgliteIndexDirectory(config),
      indexSchema: config.databaseSchema,
      log: (entry) => console.warn(JSON.stringify(entry)),
    });
    await recordIndexerStart(config);
  }
  return config;
}

/**
 * Whether Ponder keeps its RPC cache (`ponder_sync`) for a network: what lets a restart
 * with the same configuration resume without fetching again what it had indexed, and a
 * re-index (a watched address added) read the old addresses' logs from the database.
 * Before every indexer start `guardSyncCache` checks the cache against the node's chain
 * (a local chain rebuilt under the same chain id, a fork gone) and deletes it if stale.
 * Off only for a `local` index on a Postgres server (DATABASE_URL): that database outlives
 * any one Anvil and may be shared by several local stacks at once, whose chains all have
 * the same chain id; a check at start cannot protect one running stack from another.
 */
export function indexerCacheEnabled(network: Pick<NetworkConfig, "name">, config: Pick<ServiceConfig, "databaseUrl">): boolean {
  return !(network.name === "local" && config.databaseUrl !== undefined);
}

/** Asks every network's RPC for its chain id, at once, each within a short timeout. */
export async function checkChainIds(networks: NetworkConfig[], timeoutMs = CHAIN_ID_TIMEOUT_MS): Promise<string[]> {
  const answers = await Promise.all(
    networks
      .filter((network) => network.rpcUrl !== "")
      .map(async (network) => {
        const variable = `${envPrefix(network.name)}RPC_URL`;
        try {
          const response = await fetch(network.rpcUrl, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
            signal: AbortSignal.timeout(timeoutMs),
          });
          const body = (await response.json()) as { result?: string };
          const chainId = body.result === undefined ? Number.NaN : Number(BigInt(body.result));
          if (chainId !== network.chainId) {
            return `${variable} answers chain id ${Number.isNaN(chainId) ? "nothing" : chainId}, but ${network.name} is chain ${network.chainId}`;
          }
          return undefined;
        } catch (error) {
          const reason =
            (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs / 1000} s` : (error as Error).message;
          return `${variable}: eth_chainId failed (${redactSecrets(reason)})`;
        }
      }),
  );
  return answers.filter((answer): answer is string => answer !== undefined);
}

/** A stable summary of everything Ponder indexes by; a change means the index is rebuilt. */
export function indexedConfigHash(networks: NetworkConfig[]): string {
  const summary = networks.map((network) => ({
    name: network.name,
    chainId: network.chainId,
    usdc: network.usdc.toLowerCase(),
    certificate: network.certificate?.toLowerCase() ?? null,
    // Only when set, so a network without rewards keeps the hash it had before they existed.
    ...(network.rewardDistributor === undefined ? {} : { rewardDistributor: network.rewardDistributor.toLowerCase() }),
    ...(network.subscriptionManager === undefined ? {} : { subscriptionManager: network.subscriptionManager.toLowerCase() }),
    startBlock: network.startBlock,
    watched: network.paymentAddresses.map((address) => address.toLowerCase()).sort(),
  }));
  return createHash("sha256").update(JSON.stringify(summary)).digest("hex").slice(0, 16);
}

function watchedMap(networks: NetworkConfig[]): Record<string, string[]> {
  return Object.fromEntries(
    networks.map((network) => [network.name, network.paymentAddresses.map((address) => address.toLowerCase()).sort()]),
  );
}

/**
 * Adds the store's payment addresses to each network's watched set. The indexer
 * records what it starts with; a replica settles on what the indexer recorded (it
 * cannot see payments to an address the indexer does not watch).
 */
async function watchedFromStore(config: ServiceConfig, role: StartRole): Promise<void> {
  const store = openStore(config);
  try {
    await migrateStore(store);
    // A replica of a fleet reads the stable views schema: the indexer recorded its start under
    // the build schema those views select from (docs/deploy.md, "Deploys without downtime").
    if (role === "replica" && config.databaseUrl !== undefined) {
      config.recordedIndexSchema = await schemaBehindViews(config.databaseUrl, config.databaseSchema);
    }
    const recorded = await recordedStart(store, config.recordedIndexSchema ?? config.databaseSchema);
    for (const network of config.networks) {
      const rows = await store.selectFrom("payment_address").select("address").where("chain_id", "=", network.chainId).execute();
      const fromStore = rows.map((row) => row.address);
      const candidates =
        role === "replica" && recorded !== undefined
          ? (recorded.watched[network.name] ?? [])
          : [...network.paymentAddresses, ...fromStore];
      const seen = new Map<string, Address>();
      for (const address of candidates) seen.set(address.toLowerCase(), getAddress(address));
      network.paymentAddresses = [...seen.values()];
    }
  } finally {
    await store.destroy();
  }
}

/**
 * The indexer is about to start with this configuration: if it indexes other
 * addresses or contracts than the last start on this index schema, the schema is
 * dropped (Ponder refuses a schema built by another configuration), and the
 * watched set is recorded for `watching` and for the API replicas.
 */
async function recordIndexerStart(config: ServiceConfig): Promise<void> {
  const store = openStore(config);
  try {
    const recorded = await recordedStart(store, config.databaseSchema);
    const hash = indexedConfigHash(config.networks);
    if (recorded !== undefined && recorded.hash !== hash) await dropIndexSchema(config);
    const row = {
      index_schema: config.databaseSchema,
      config_hash: hash,
      watched_json: JSON.stringify(watchedMap(config.networks)),
      started_at: Date.now(),
    };
    await store
      .insertInto("indexer_start")
      .values(row)
      .onConflict((oc) =>
        oc.column("index_schema").doUpdateSet({ config_hash: hash, watched_json: row.watched_json, started_at: row.started_at }),
      )
      .execute();
  } finally {
    await store.destroy();
  }
}

/**
 * The schema whose tables the views of `schema` select from (Ponder's `--views-schema`), or
 * `schema` itself when it holds the tables (or no views yet).
 */
export async function schemaBehindViews(databaseUrl: string, schema: string): Promise<string> {
  const { default: pg } = await import("pg");
  const client = new pg.Client(databaseUrl);
  client.on("error", () => undefined);
  await client.connect();
  try {
    // From the catalog (pg_depend), which every role reads, not information_schema (owners' views only).
    const result = await client.query<{ table_schema: string }>(
      `SELECT DISTINCT t.relnamespace::regnamespace::text AS table_schema
         FROM pg_class v
         JOIN pg_rewrite r ON r.ev_class = v.oid
         JOIN pg_depend d ON d.objid = r.oid AND d.classid = 'pg_rewrite'::regclass
         JOIN pg_class t ON t.oid = d.refobjid
        WHERE v.relkind = 'v' AND v.relnamespace::regnamespace::text = $1 AND t.relnamespace <> v.relnamespace`,
      [schema],
    );
    return result.rows.length === 1 ? (result.rows[0] as { table_schema: string }).table_schema.replace(/^"|"$/g, "") : schema;
  } finally {
    await client.end();
  }
}

export async function recordedStart(
  store: Store,
  indexSchema: string,
): Promise<{ hash: string; watched: Record<string, string[]>; startedAt: number } | undefined> {
  const row = await store.selectFrom("indexer_start").selectAll().where("index_schema", "=", indexSchema).executeTakeFirst();
  if (row === undefined) return undefined;
  return { hash: row.config_hash, watched: JSON.parse(row.watched_json), startedAt: Number(row.started_at) };
}

/**
 * What the index holds was built for other addresses or contracts, and Ponder
 * refuses to start on a schema built by a different configuration. Dropping the
 * schema makes it index again, from its RPC cache (`ponder_sync`, kept), so only
 * the new address's logs are fetched from the node.
 */
async function dropIndexSchema(config: ServiceConfig): Promise<void> {
  const statements = [`DROP SCHEMA IF EXISTS "${config.databaseSchema}" CASCADE`, `CREATE SCHEMA "${config.databaseSchema}"`];
  if (config.databaseUrl !== undefined) {
    const { default: pg } = await import("pg");
    const client = new pg.Client(config.databaseUrl);
    await client.connect();
    try {
      for (const statement of statements) await client.query(statement);
    } finally {
      await client.end();
    }
    return;
  }
  const directory = pgliteIndexDirectory(config);
  if (!existsSync(directory)) return;
  const database = new PGlite(directory);
  try {
    for (const statement of statements) await database.exec(statement);
  } finally {
    await database.close();
  }
}

export function pgliteIndexDirectory(config: Pick<ServiceConfig, "dataDir">): string {
  return join(config.dataDir, "ponder");
}

/** Present while a first start creates the embedded index; removed once the service is up. */
export function firstStartMarker(config: Pick<ServiceConfig, "dataDir">): string {
  return join(config.dataDir, "ponder.first-start");
}

/**
 * A first start killed while PGlite creates its database leaves a directory that
 * aborts (`RuntimeError: Aborted()`) on every later open. The marker written before
 * that first start says so: such a directory holds nothing yet and is removed.
 */
export function recoverInterruptedFirstStart(
  config: Pick<ServiceConfig, "dataDir" | "databaseUrl">,
): "recovered" | "fresh" | "existing" {
  if (config.databaseUrl !== undefined) return "existing";
  const directory = pgliteIndexDirectory(config);
  const marker = firstStartMarker(config);
  let outcome: "recovered" | "fresh" | "existing" = "existing";
  if (existsSync(marker)) {
    rmSync(directory, { recursive: true, force: true });
    outcome = "recovered";
  } else if (!existsSync(directory)) {
    outcome = "fresh";
  }
  if (outcome !== "existing") {
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(marker, `${new Date().toISOString()}\n`);
  }
  return outcome;
}

/** The service is up, so Ponder has created and migrated its index: the first start is over. */
export function completeFirstStart(config: Pick<ServiceConfig, "dataDir">): void {
  rmSync(firstStartMarker(config), { force: true });
}

const STARTED = Symbol.for("usdc-settlement.started-config");

/** `ponder.config.ts` hands the validated configuration to the API entry of the same process. */
export function rememberStartedConfig(config: ServiceConfig): void {
  (globalThis as Record<symbol, unknown>)[STARTED] = config;
}

export function startedConfig(): ServiceConfig | undefined {
  return (globalThis as Record<symbol, unknown>)[STARTED] as ServiceConfig | undefined;
}

/** The index schema Ponder was given on its command line (`--schema <name>`), if any. */
export function schemaOfPonderCommand(argv: string[]): string | undefined {
  const index = argv.indexOf("--schema");
  return index === -1 ? undefined : argv[index + 1];
}

/** Which Ponder command evaluates `ponder.config.ts`. */
export function roleOfPonderCommand(argv: string[]): StartRole {
  const command = argv.slice(2).find((arg) => !arg.startsWith("-"));
  if (command === "start" || command === "dev") return "indexer";
  if (command === "serve") return "replica";
  return "check";
}
