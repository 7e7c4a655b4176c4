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
 * The service's OpenAPI document as `/openapi.json` serves it, built in this process
 * from the real app (`createApp`) without a chain or an indexer: the document depends
 * on the route definitions only. The app gets a migrated SQLite store in a throw-away
 * directory and an index that refuses every read (nothing is read to build the
 * document); it is asked for `/openapi.json` like any client would.
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), "settlement-openapi-"));
  const store = openSqliteStore(join(dataDir, "app.sqlite"));
  try {
    await migrateStore(store);
    const config = loadConfig({
      LOCAL_MODE: "true",
      DATA_DIR: dataDir,
      NETWORKS: "local",
      // Never contacted: building the document reads no chain.
      LOCAL_RPC_URL: "http://127.0.0.1:9",
      LOCAL_USDC_ADDRESS: "0x0000000000000000000000000000000000000001",
    });
    const noIndex = new Proxy({} as IndexedChain, {
      get(_target, name) {
        throw new Error(`the OpenAPI document is built without an index (read of indexed.${String(name)})`);
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
    const response = await createApp(context).request("/openapi.json");
    if (response.status !== 200) throw new Error(`GET /openapi.json answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  } finally {
    await store.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
