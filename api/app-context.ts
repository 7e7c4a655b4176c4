import type { PublicClient } from "viem";
import type { NetworkConfig } from "./config/networks.js";
import type { ServiceSettings } from "./config/settings.js";
import type { IndexedChain } from "./indexed/indexed-chain.js";
import type { IndexerWatchdog } from "./indexed/indexer-watchdog.js";
import type { SecretBox } from "./outbox/secret-box.js";
import type { createMissingTransferExplainer } from "./settlement/explain-missing-transfer.js";
import type { Store } from "./store/open-store.js";

/** What every route and worker is built from; created once per process. */
export type AppContext = {
  store: Store;
  indexed: IndexedChain;
  networks: NetworkConfig[];
  settings: ServiceSettings;
  /** Seals and opens webhook signing secrets (key from SECRETS_KEY_FILE). */
  secretBox: SecretBox;
  /** One viem client per network, for the rare look-ups the index cannot answer. */
  rpc: Map<number, PublicClient>;
  /** Cached receipt look-ups for hashes the index does not hold. */
  explainer: ReturnType<typeof createMissingTransferExplainer>;
  /** Latest node and index samples per chain (health reads them; absent in tools without a service). */
  indexerWatchdog?: IndexerWatchdog;
  /** This process's workers: acting or standing by, and whether they hear the index (health reads it; absent in tools). */
  workersHere?: () => WorkersHere;
};

export type WorkersHere = {
  /** `acting`: they tick (this process holds the workers' lease, or the store needs none). */
  workers: "acting" | "standing_by" | "off";
  /** `not_used`: the index is not on Postgres (or no workers run here), so the workers poll. */
  indexNotifications: "listening" | "not_listening" | "not_used";
};
