import type { PublicClient } from "viem";
import type { NetworkConfig } from "../config/networks.js";
import type { WatchdogSettings } from "../config/option-types.js";
import { logJson } from "../logging/redact.js";
import type { IndexedChain } from "./indexed-chain.js";

/**
 * Watches, per chain, whether the node answers and whether the index follows
 * it, independently of why it would not (docs/operations.md, "The indexer and
 * the chain node"). Health reads the latest sample, so `/v1/health` never waits
 * on the node itself.
 *
 * The index is *stalled* when it is behind the node's head and has not moved
 * forward for `stallTimeoutMs`, while the node kept answering (an index that is
 * catching up, however slowly, is only *behind*). A stall is
 * logged once, reported by health, and (in the process that indexes) ends the
 * process with exit code 75 so that its process manager starts it again; Ponder
 * then resumes from its last checkpoint.
 */

export type ChainWatch = {
  network: string;
  chainId: number;
  node: {
    /** The latest probe answered. */
    ok: boolean;
    head: bigint | undefined;
    /** When the node last answered (ms since epoch). */
    answeredAt: number | undefined;
    /** Since when probes fail, if they do. */
    failingSince: number | undefined;
    error: string | undefined;
  };
  index: {
    head: bigint | undefined;
    /** The index is behind this head since `since` (cleared once it reaches `target`). */
    behind: { target: bigint; since: number } | undefined;
    /** When the indexed head last moved forward. */
    progressAt: number | undefined;
    stalledAt: number | undefined;
  };
};

export type IndexerWatchdog = {
  /** The latest sample of every enabled chain. */
  watches: () => ChainWatch[];
  stop: () => void;
};

export class IndexerStalledError extends Error {
  override name = "IndexerStalledError";
}

const log = (entry: Record<string, unknown>) => logJson(entry);

export function startIndexerWatchdog(params: {
  networks: NetworkConfig[];
  indexed: IndexedChain;
  /** Clients used only for probes; their own timeout should not exceed the probe timeout. */
  clients: Map<number, PublicClient>;
  settings: WatchdogSettings;
  /** Whether this process indexes (`ponder start`); an API replica (`ponder serve`) only reports. */
  indexes: boolean;
  /** What a stall does when restarts are on; by default the process exits with code 75. */
  onStall?: (watch: ChainWatch) => void;
  /**
   * Local mode only (an Anvil chain that mines a block only when a transaction comes):
   * after how long without progress behind the node's head the watchdog mines one
   * empty block. Ponder 0.16.10 gives up a new head whose data fetch failed and takes
   * it up again only when a newer head arrives (sync-realtime keeps it as
   * `latestFetchedBlock`, so the same head counts as a duplicate); on a live chain that
   * is the next block, seconds later, but a local chain may never mine another and the
   * payment in that block would wait for the stall restart. Undefined: never.
   */
  nudgeAfterMs?: number;
  /**
   * Whether the indexer has finished its backfill and follows the chain live
   * (Ponder's `/ready`). Before, the index is expected to be behind: no stall is judged.
   */
  isLive?: () => Promise<boolean>;
}): IndexerWatchdog {
  const { settings } = params;
  const watches = new Map<number, ChainWatch>(
    params.networks.map((network) => [
      network.chainId,
      {
        network: network.name,
        chainId: network.chainId,
        node: { ok: false, head: undefined, answeredAt: undefined, failingSince: undefined, error: "not probed yet" },
        index: { head: undefined, behind: undefined, progressAt: undefined, stalledAt: undefined },
      },
    ]),
  );
  let stopped = false;
  let restarting = false;
  const nudgedAt = new Map<number, number>();
  let live = params.isLive === undefined;

  const sampleChain = async (watch: ChainWatch) => {
    const now = Date.now();
    const client = params.clients.get(watch.chainId);
    const [nodeHead, heads] = await Promise.all([
      withTimeout(
        client ? client.getBlockNumber({ cacheTime: 0 }) : Promise.reject(new Error("no client")),
        settings.probeTimeoutMs,
      ).then(
        (head) => ({ head }),
        (error: unknown) => ({ error }),
      ),
      withTimeout(params.indexed.heads(), settings.probeTimeoutMs).catch(() => undefined),
    ]);
    const indexHead = heads?.get(watch.chainId)?.blockNumber;
    if (indexHead !== undefined && (watch.index.head === undefined || indexHead > watch.index.head)) {
      watch.index.head = indexHead;
      watch.index.progressAt = now;
    }

    if ("error" in nodeHead) {
      if (watch.node.ok || watch.node.failingSince === undefined) {
        log({ level: "warn", msg: "Chain node not answering", network: watch.network, error: describe(nodeHead.error) });
      }
      watch.node = { ...watch.node, ok: false, failingSince: watch.node.failingSince ?? now, error: describe(nodeHead.error) };
      // Only a node that answers can show the index to be stuck: start over once it does.
      watch.index.behind = undefined;
      watch.index.stalledAt = undefined;
      return;
    }
    if (!watch.node.ok && watch.node.failingSince !== undefined) {
      log({ level: "info", msg: "Chain node answers again", network: watch.network, failedForMs: now - watch.node.failingSince });
    }
    watch.node = { ok: true, head: nodeHead.head, answeredAt: now, failingSince: undefined, error: undefined };

    const index = watch.index;
    if (!live) {
      live = await (params.isLive?.() ?? Promise.resolve(true)).catch(() => false);
      if (!live) return;
    }
    if (index.behind !== undefined && index.head !== undefined && index.head >= index.behind.target) {
      index.behind = undefined;
    }
    if (index.stalledAt !== undefined && (index.behind === undefined || (index.progressAt ?? 0) > index.stalledAt)) {
      log({ level: "info", msg: "Indexer moves again", network: watch.network, indexedBlock: String(index.head) });
      index.stalledAt = undefined;
    }
    if (index.behind === undefined && (index.head === undefined || index.head < nodeHead.head)) {
      index.behind = { target: nodeHead.head, since: now };
    }
    // An index that keeps moving is catching up, however far behind: only one that has
    // not moved for the whole timeout, while behind a node that answers, is stalled.
    const quietSince = Math.max(index.behind?.since ?? now, index.progressAt ?? 0);
    if (
      params.nudgeAfterMs !== undefined &&
      index.behind !== undefined &&
      now - quietSince > params.nudgeAfterMs &&
      now - (nudgedAt.get(watch.chainId) ?? 0) > params.nudgeAfterMs
    ) {
      nudgedAt.set(watch.chainId, now);
      log({
        level: "warn",
        msg: "Index behind a local chain without moving; mining an empty block so the indexer takes up the head it dropped",
        network: watch.network,
        indexedBlock: index.head === undefined ? null : String(index.head),
        chainHead: String(nodeHead.head),
      });
      await client?.request({ method: "evm_mine" } as never).catch(() => undefined);
    }
    if (index.behind !== undefined && index.stalledAt === undefined && now - quietSince > settings.stallTimeoutMs) {
      index.stalledAt = now;
      const lagBlocks = index.head === undefined ? null : Number(nodeHead.head - index.head);
      const restart = settings.restartOnStall && params.indexes;
      log({
        level: "error",
        msg: "Indexer stalled: the index stays behind the chain node's head while the node answers",
        network: watch.network,
        chainId: watch.chainId,
        indexedBlock: index.head === undefined ? null : String(index.head),
        chainHead: String(nodeHead.head),
        lagBlocks,
        behindForMs: now - index.behind.since,
        noProgressForMs: now - quietSince,
        action: restart ? `exit with code 75 in ${settings.restartDelayMs} ms for the process manager to restart` : "report only",
      });
      if (restart && !restarting) {
        restarting = true;
        setTimeout(() => {
          if (watch.index.stalledAt === undefined) {
            restarting = false;
            log({ level: "info", msg: "Indexer moved again before its restart; not restarting", network: watch.network });
            return;
          }
          (params.onStall ?? exitForRestart)(watch);
        }, settings.restartDelayMs).unref();
      }
    }
  };

  const loop = async () => {
    while (!stopped) {
      const started = Date.now();
      await Promise.all([...watches.values()].map((watch) => sampleChain(watch).catch(() => undefined)));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, settings.sampleIntervalMs - (Date.now() - started))));
    }
  };
  void loop();

  return {
    watches: () => [...watches.values()],
    stop() {
      stopped = true;
    },
  };
}

/**
 * Ends the process the way Ponder ends it on an unexpected error: its handler
 * shuts down cleanly and exits with code 75 ("temporary failure, start again").
 * If nothing handles the error within 10 s, the process exits with 75 itself.
 */
function exitForRestart(watch: ChainWatch): void {
  setTimeout(() => process.exit(75), 10_000).unref();
  setImmediate(() => {
    throw new IndexerStalledError(
      `the index of ${watch.network} stayed behind the node's head; exiting so that the process manager starts the indexer again`,
    );
  });
}

function withTimeout<value>(promise: Promise<value>, ms: number): Promise<value> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function describe(error: unknown): string {
  if (error instanceof Error) return (error as { shortMessage?: string }).shortMessage ?? error.message;
  return String(error);
}
