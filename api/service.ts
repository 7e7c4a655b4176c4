import { createPublicClient, http, type PublicClient } from "viem";
import { createApp } from "./app.js";
import type { AppContext, WorkersHere } from "./app-context.js";
import type { ServiceConfig } from "./config/config.js";
import { settingsOf } from "./config/settings.js";
import { completeFirstStart, startedConfig } from "./config/startup.js";
import { endBuildTransformer } from "./end-build-transformer.js";
import { noteChainActivity } from "./indexed/chain-activity.js";
import { listenToIndex } from "./indexed/index-notifications.js";
import { createIndexedChain, type IndexedChain, type PonderDb, type PonderSchema } from "./indexed/indexed-chain.js";
import { startIndexerWatchdog } from "./indexed/indexer-watchdog.js";
import { createSecretBox, createSecretsKeyFileIfMissing, readSecretsKeyFile } from "./outbox/secret-box.js";
import { serviceWorkers } from "./service-workers.js";
import { createMissingTransferExplainer } from "./settlement/explain-missing-transfer.js";
import { migrateStore, openStore, type Store } from "./store/open-store.js";
import { type RunningWorkers, runWorkers, stopWorkersBeforeExit } from "./workers/run-worker.js";
import { holdWorkerLease } from "./workers/worker-lease.js";

/**
 * Builds the whole service inside Ponder's API process from the configuration
 * `ponder.config.ts` validated at start: the app store (migrated), the index
 * reader, RPC clients and the HTTP app.
 */
export async function startService(params: { db: unknown; schema: unknown }) {
  const config = startedConfig();
  if (config === undefined) throw new Error("ponder.config.ts did not hand over the validated configuration");
  // Ponder has created and migrated its index before it builds the API.
  completeFirstStart(config);
  const store = openStore(config);
  await migrateStore(store);
  const indexed = createIndexedChain({ db: params.db as PonderDb, schema: params.schema as PonderSchema });
  const settings = settingsOf(config);
  const context = createServiceContext(config, store, indexed, {
    // `ponder serve` is an API replica: it has no indexer of its own to restart.
    indexes: !process.argv.includes("serve"),
    isLive: () => ponderIsReady(settings.port),
  });
  if (config.workers) {
    const started = startWorkers(context, config);
    context.workersHere = started.here;
    stopWorkersBeforeExit(started, config.workersStopGraceMs);
  }
  // This runs while Ponder builds its API entry, its last file: once that is done, Vite's
  // transformer is only memory (api/end-build-transformer.ts).
  setImmediate(endBuildTransformer);
  return createApp(context);
}

/**
 * What every route and worker of a process is built from (api/app-context.ts), given the
 * store and the index reader: the RPC clients, the secrets' box, the indexer watchdog. The
 * same for a Ponder process (`startService`) and for a plain replica (api/replica/plain-server.ts).
 */
export function createServiceContext(
  config: ServiceConfig,
  store: Store,
  indexed: IndexedChain,
  watchdog: { indexes: boolean; isLive: () => Promise<boolean> },
): AppContext {
  const rpc = new Map<number, PublicClient>(
    config.networks.map((network) => [
      network.chainId,
      // Bounded: a node that does not answer costs a request at most ~10 s (then 503 rpc_unavailable).
      createPublicClient({ transport: http(network.rpcUrl, { retryCount: 1, timeout: 5_000 }) }) as PublicClient,
    ]),
  );
  const settings = settingsOf(config);
  const secretsKey = config.secretsKey ?? readSecretsKeyFile(createSecretsKeyFileIfMissing(config.secretsKeyPath as string));
  const indexerWatchdog = startIndexerWatchdog({
    networks: config.networks,
    indexed,
    clients: new Map(
      config.networks.map((network) => [
        network.chainId,
        createPublicClient({
          transport: http(network.rpcUrl, { retryCount: 0, timeout: settings.watchdog.probeTimeoutMs }),
        }) as PublicClient,
      ]),
    ),
    settings: settings.watchdog,
    indexes: watchdog.indexes,
    isLive: watchdog.isLive,
  });
  return {
    store,
    indexed,
    networks: config.networks,
    settings,
    secretBox: createSecretBox(secretsKey),
    rpc,
    explainer: createMissingTransferExplainer(),
    indexerWatchdog,
    workersHere: () => ({ workers: "off", indexNotifications: "not_used" }),
  };
}

/**
 * The workers of this process (docs/operations.md, "Workers: woken by the index, one
 * set at a time"). On a Postgres store they act only while this process holds the
 * workers' lease; on a Postgres index the index's notifications wake the workers that
 * follow it. The development profile (SQLite or PGlite store, PGlite index) has
 * neither: one process, polling as it always did.
 */
function startWorkers(context: AppContext, config: ServiceConfig): RunningWorkers & { here: () => WorkersHere } {
  const onPostgres = (url: string | undefined): url is string =>
    url !== undefined && (url.startsWith("postgres://") || url.startsWith("postgresql://"));
  const lease = onPostgres(config.storeUrl) ? holdWorkerLease({ storeUrl: config.storeUrl }) : undefined;
  let running: RunningWorkers | undefined;
  const notifications = onPostgres(config.databaseUrl)
    ? listenToIndex({
        databaseUrl: config.databaseUrl,
        schema: config.databaseSchema,
        onIndexed() {
          // The head read before this commit must not answer the woken workers, and the
          // read gates of the workers must open (the index did move).
          context.indexed.forgetHeads();
          noteChainActivity();
          running?.wakeIndexDriven();
        },
        // Listening again: what was committed meanwhile is looked at now. Not listening:
        // the workers leave their long wait and poll as without notifications.
        onConnectionChange: () => running?.wakeIndexDriven(),
      })
    : undefined;
  running = runWorkers(context.store, serviceWorkers(context), {
    lease,
    indexPush: notifications,
    safetyPollMs: config.workerSafetyPollMs,
  });
  const workers = running;
  return {
    here: () => ({
      workers: lease === undefined || lease.held() ? "acting" : "standing_by",
      indexNotifications: notifications === undefined ? "not_used" : notifications.connected() ? "listening" : "not_listening",
    }),
    wakeIndexDriven: workers.wakeIndexDriven,
    async stop(graceMs) {
      await workers.stop(graceMs);
      await notifications?.close();
    },
  };
}

/** Ponder's own `/ready` on this process' server (200 once the backfill is done). */
async function ponderIsReady(envPort: string | undefined): Promise<boolean> {
  const argument = (name: string) => {
    const index = process.argv.indexOf(name);
    return index === -1 ? undefined : process.argv[index + 1];
  };
  const port = argument("--port") ?? argument("-p") ?? envPort ?? "42069";
  const host = argument("--hostname") ?? argument("-H") ?? "127.0.0.1";
  const response = await fetch(`http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${port}/ready`, {
    signal: AbortSignal.timeout(2_000),
  });
  return response.status === 200;
}
