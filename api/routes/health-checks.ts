import { z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { redactSecrets } from "../logging/redact.js";
import type { Store } from "../store/open-store.js";
import { storeAvailability } from "../store/store-availability.js";
import { pingStore } from "../store/store-ping.js";

/**
 * Health's checks of the store, the chain node and the indexer's progress, kept
 * apart from the route so that other checks can be added beside them.
 */
export const HealthReasonSchema = z.object({
  check: z.string(),
  network: z.string().optional(),
  /** `store_unavailable`, `rpc_unavailable`, `indexer_stalled`, `index_missing`, ... */
  code: z.string(),
  detail: z.string(),
});
export type HealthReason = z.infer<typeof HealthReasonSchema>;

export const ChainCheckSchema = z.object({
  node: z.object({
    /** The latest probe of the node (one a second) answered within 2 s. */
    answering: z.boolean(),
    failingForMs: z.number().int().nullable(),
    error: z.string().nullable(),
  }),
  indexer: z.object({
    /** `following`: at the node's head; `behind`: catching up; `stalled`: behind for longer than INDEXER_STALL_TIMEOUT_MS while the node answers. */
    state: z.enum(["following", "behind", "stalled", "unknown"]),
    behindForMs: z.number().int().nullable(),
  }),
});

const STORE_CHECK_TIMEOUT_MS = 1_500;
/** A probe sample older than this means the watchdog itself is stuck: the node counts as unknown. */
const SAMPLE_STALE_MS = 5_000;

export function withTimeout<value>(promise: Promise<value>, ms: number): Promise<value> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The store answers a read within 1.5 s, and its latest write did not fail for want of a lock or a connection. */
export async function storeCheck(store: Store): Promise<{ ok: boolean; writable: boolean; reasons: HealthReason[] }> {
  const answers = await withTimeout(pingStore(store), STORE_CHECK_TIMEOUT_MS).then(
    () => true,
    () => false,
  );
  const writable = storeAvailability.writable();
  const reasons: HealthReason[] = [];
  if (!answers) {
    reasons.push({
      check: "store",
      code: "store_unavailable",
      detail: `The store did not answer a read within ${STORE_CHECK_TIMEOUT_MS} ms.`,
    });
  } else if (!writable) {
    reasons.push({
      check: "store",
      code: "store_unavailable",
      detail: redactSecrets(`The latest write failed: ${storeAvailability.lastFailure()?.message ?? "unknown"}.`),
    });
  }
  return { ok: answers && writable, writable, reasons };
}

type ChainCheck = z.infer<typeof ChainCheckSchema> & { chainHead: bigint | undefined; reasons: HealthReason[] };

/** Node and indexer state per chain, from the watchdog's latest samples (no RPC call here). */
export async function chainChecks(context: AppContext): Promise<Map<number, ChainCheck>> {
  const checks = new Map<number, ChainCheck>();
  const now = Date.now();
  const watchdog = context.indexerWatchdog;
  // Before the watchdog's first sample (just after start), or in a context without
  // one (a tool): ask the node once, briefly.
  const sampled = new Set(
    (watchdog?.watches() ?? [])
      .filter((watch) => watch.node.answeredAt !== undefined || watch.node.failingSince !== undefined)
      .map((watch) => watch.chainId),
  );
  for (const network of context.networks.filter((candidate) => !sampled.has(candidate.chainId))) {
    const head = await withTimeout(
      context.rpc.get(network.chainId)?.getBlockNumber({ cacheTime: 2_000 }) ?? Promise.reject(new Error("no client")),
      2_000,
    ).catch(() => undefined);
    checks.set(network.chainId, {
      chainHead: head,
      node: { answering: head !== undefined, failingForMs: null, error: head === undefined ? "no answer" : null },
      indexer: { state: "unknown", behindForMs: null },
      reasons: head === undefined ? [rpcReason(network.name, "no answer within 2 s")] : [],
    });
  }
  for (const watch of (watchdog?.watches() ?? []).filter((candidate) => sampled.has(candidate.chainId))) {
    const fresh = watch.node.answeredAt !== undefined && now - watch.node.answeredAt < SAMPLE_STALE_MS;
    const answering = watch.node.ok && fresh;
    const behindForMs = watch.index.behind === undefined ? null : now - watch.index.behind.since;
    const state = !answering
      ? ("unknown" as const)
      : watch.index.stalledAt !== undefined
        ? ("stalled" as const)
        : watch.index.behind !== undefined
          ? ("behind" as const)
          : ("following" as const);
    const reasons: HealthReason[] = [];
    if (!answering) reasons.push(rpcReason(watch.network, watch.node.error ?? "no recent answer"));
    if (state === "stalled") {
      const lag =
        watch.node.head !== undefined && watch.index.head !== undefined ? watch.node.head - watch.index.head : undefined;
      reasons.push({
        check: "indexer",
        network: watch.network,
        code: "indexer_stalled",
        detail: `The index has stayed behind the node's head for ${Math.round((behindForMs ?? 0) / 1000)} s while the node answers${lag === undefined ? "" : ` (${lag} blocks behind)`}; unless INDEXER_STALL_RESTART=false the indexer restarts.`,
      });
    }
    checks.set(watch.chainId, {
      chainHead: watch.node.head,
      node: {
        answering,
        failingForMs: watch.node.failingSince === undefined ? null : now - watch.node.failingSince,
        error: answering ? null : (watch.node.error ?? "no recent answer"),
      },
      indexer: { state, behindForMs },
      reasons,
    });
  }
  return checks;
}

function rpcReason(network: string, error: string): HealthReason {
  return { check: "node", network, code: "rpc_unavailable", detail: redactSecrets(`The chain node does not answer: ${error}.`) };
}

/**
 * The chain head and lag health reports. The node's head is sampled every few seconds
 * while the index follows every block (on a chain that mines each second, as a fork of
 * Base does, the index is often ahead of the last sample): a sampled head below the
 * indexed block is stale, so the indexed block is the best known head and the lag is 0,
 * never negative.
 */
export function headAndLag(
  indexed: bigint | undefined,
  sampledHead: bigint | undefined,
): { chainHead: bigint | undefined; lagBlocks: number | null } {
  if (indexed === undefined || sampledHead === undefined) return { chainHead: sampledHead, lagBlocks: null };
  const chainHead = sampledHead > indexed ? sampledHead : indexed;
  return { chainHead, lagBlocks: Number(chainHead - indexed) };
}
