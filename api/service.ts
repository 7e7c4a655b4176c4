import { createPublicClient, http, type PublicClient } from "viem";
import { createApp } from "./app.js";
import type { AppContext } from "./app-context.js";
import { dataDirectory, loadNetworks } from "./config/networks.js";
import { loadSettings } from "./config/settings.js";
import { createIndexedChain, type PonderDb, type PonderSchema } from "./indexed/indexed-chain.js";
import { loadWatchdogSettings, startIndexerWatchdog } from "./indexed/indexer-watchdog.js";
import { createMissingTransferExplainer } from "./settlement/explain-missing-transfer.js";
import { migrateStore, openStore } from "./store/open-store.js";
import { runWorkers } from "./workers/run-worker.js";
import { serviceWorkers } from "./workers/service-workers.js";

/**
 * Builds the whole service inside Ponder's API process: configuration, the app
 * store (migrated), the index reader, RPC clients and the HTTP app.
 */
export async function startService(params: { db: unknown; schema: unknown; publicClients?: unknown }) {
  const networks = loadNetworks();
  const settings = loadSettings();
  const store = openStore({ storeUrl: process.env.STORE_URL, dataDir: dataDirectory() });
  await migrateStore(store);
  const indexed = createIndexedChain({ db: params.db as PonderDb, schema: params.schema as PonderSchema });
  const rpc = new Map<number, PublicClient>(
    networks.map((network) => [
      network.chainId,
      // Bounded: a node that does not answer costs a request at most ~10 s (then 503 rpc_unavailable).
      createPublicClient({ transport: http(network.rpcUrl, { retryCount: 1, timeout: 5_000 }) }) as PublicClient,
    ]),
  );
  const watchdogSettings = loadWatchdogSettings();
  const indexerWatchdog = startIndexerWatchdog({
    networks,
    indexed,
    clients: new Map(
      networks.map((network) => [
        network.chainId,
        createPublicClient({
          transport: http(network.rpcUrl, { retryCount: 0, timeout: watchdogSettings.probeTimeoutMs }),
        }) as PublicClient,
      ]),
    ),
    settings: watchdogSettings,
    // `ponder serve` is an API replica: it has no indexer of its own to restart.
    indexes: !process.argv.includes("serve"),
    isLive: ponderIsReady,
  });
  const context: AppContext = {
    store,
    indexed,
    networks,
    settings,
    rpc,
    explainer: createMissingTransferExplainer(),
    indexerWatchdog,
  };
  if (process.env.WORKERS !== "off") runWorkers(store, serviceWorkers(context));
  return createApp(context);
}

/** Ponder's own `/ready` on this process' server (200 once the backfill is done). */
async function ponderIsReady(): Promise<boolean> {
  const argument = (name: string) => {
    const index = process.argv.indexOf(name);
    return index === -1 ? undefined : process.argv[index + 1];
  };
  const port = argument("--port") ?? argument("-p") ?? process.env.PORT ?? "42069";
  const host = argument("--hostname") ?? argument("-H") ?? "127.0.0.1";
  const response = await fetch(`http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${port}/ready`, {
    signal: AbortSignal.timeout(2_000),
  });
  return response.status === 200;
}
