import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../api/app.js";
import type { AppContext } from "../api/app-context.js";
import { loadConfig } from "../api/config/config.js";
import { settingsOf } from "../api/config/settings.js";
import type { IndexedChain } from "../api/indexed/indexed-chain.js";
import { createSecretBox, generateSecretsKey } from "../api/outbox/secret-box.js";
import { createMissingTransferExplainer } from "../api/settlement/explain-missing-transfer.js";
import { migrateStore, openSqliteStore } from "../api/store/open-store.js";

/**
 * The service's HTTP app (`createApp`, local mode) without a chain or an indexer: a
 * migrated SQLite store in a throw-away directory, no RPC client, and an index that
 * refuses every read. Enough for what needs no chain: the OpenAPI document, webhook
 * endpoints and their signed test events. `close()` removes the directory.
 */
export async function createAppWithoutChain(overrides: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "settlement-app-"));
  const store = openSqliteStore(join(dataDir, "app.sqlite"));
  await migrateStore(store);
  const config = loadConfig({
    LOCAL_MODE: "true",
    DATA_DIR: dataDir,
    NETWORKS: "local",
    // Never contacted: nothing here reads the chain.
    LOCAL_RPC_URL: "http://127.0.0.1:9",
    LOCAL_USDC_ADDRESS: "0x0000000000000000000000000000000000000001",
    ...overrides,
  });
  const noIndex = new Proxy({} as IndexedChain, {
    get(_target, name) {
      throw new Error(`this app runs without an index (read of indexed.${String(name)})`);
    },
  });
  const context: AppContext = {
    store,
    indexed: noIndex,
    networks: config.networks,
    settings: settingsOf(config),
    secretBox: createSecretBox(Buffer.from(generateSecretsKey(), "hex")),
    rpc: new Map(),
    explainer: createMissingTransferExplainer(),
  };
  return {
    app: createApp(context),
    context,
    async close() {
      await store.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The service's OpenAPI document exactly as `GET /openapi.json` serves it, built in
 * this process from the real app: the document depends on the route definitions only.
 */
export async function openApiDocument(): Promise<unknown> {
  const { app, close } = await createAppWithoutChain();
  try {
    const response = await app.request("/openapi.json");
    if (response.status !== 200) throw new Error(`GET /openapi.json answered ${response.status}: ${await response.text()}`);
    return await response.json();
  } finally {
    await close();
  }
}
