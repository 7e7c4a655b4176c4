import { OpenAPIHono, z } from "@hono/zod-openapi";
import { unreconciledChecks } from "../accounting/reconciliation-checks.js";
import type { AppContext } from "../app-context.js";
import { relayerHealth } from "../gasless/gasless-view.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { listPaymentAddresses, watchedByIndexer } from "../partners/payment-addresses.js";
import { reorgSummary } from "../settlement/reorg-watch.js";
import { checksum } from "../values/checksum-address.js";
import { readHeartbeats } from "../workers/run-worker.js";
import type { AppEnv } from "./app-env.js";
import { ChainCheckSchema, chainChecks, HealthReasonSchema, headAndLag, storeCheck, withTimeout } from "./health-checks.js";

const HealthSchema = z
  .object({
    status: z.enum(["ok", "degraded"]),
    store: z.object({ ok: z.boolean(), writable: z.boolean() }),
    chains: z.array(
      z.object({
        network: z.string(),
        chainId: z.number().int(),
        indexedBlock: z.string().nullable(),
        chainHead: z.string().nullable(),
        lagBlocks: z.number().int().nullable(),
        requiredConfirmations: z.number().int(),
        ...ChainCheckSchema.shape,
        watchedAddresses: z.number().int().openapi({ description: "Payment addresses the indexer started with" }),
        addressesAwaitingRestart: z.number().int().openapi({
          description:
            "Payment addresses the index this process reads does not watch yet (`watching: false`): they are watched once an indexer whose build includes them serves the index (on one machine its restart; in a fleet a new build schema behind the views, docs/deploy.md)",
        }),
      }),
    ),
    workers: z.array(z.object({ worker: z.string(), alive: z.boolean(), lastBeatAt: z.string() })),
    thisProcess: z
      .object({
        workers: z.enum(["acting", "standing_by", "off"]),
        indexNotifications: z.enum(["listening", "not_listening", "not_used"]),
      })
      .openapi({
        description:
          "The process that answered: whether its workers act (it holds the workers' lease, or the store needs none) or stand by, and whether they are woken by the index's notifications (docs/operations.md)",
      }),
    reorgs: z
      .object({
        settledPaymentsReorged: z.number().int(),
        last: z
          .object({
            chainId: z.number().int(),
            transactionHash: z.string(),
            logIndex: z.number().int(),
            blockNumber: z.string(),
            orderId: z.string().nullable(),
            detectedAt: z.string(),
          })
          .nullable(),
      })
      .nullable()
      .openapi({
        description:
          "Credited payments a reorg took off the chain (each also sent as payment.reorged); null when the store cannot be read",
      }),
    /** Why the status is `degraded` (empty when `ok`). */
    reasons: z.array(HealthReasonSchema),
    relayers: z
      .array(
        z.object({
          network: z.string(),
          chainId: z.number().int(),
          address: z.string(),
          balanceWei: z.string().nullable(),
          lowBalanceWei: z.string(),
          lowBalance: z.boolean(),
          balanceFloorWei: z
            .string()
            .openapi({ description: "Below this balance health is `degraded` (`RELAYER_BALANCE_FLOOR_WEI`)" }),
          belowFloor: z.boolean(),
          warning: z.string().nullable(),
        }),
      )
      .openapi({ description: "Gasless payment: each network's relayer and its ETH balance (a warning when low)" }),
    accounting: z
      .object({
        unreconciled: z.array(
          z.object({
            chainId: z.number().int(),
            paymentAddress: z.string(),
            blockNumber: z.string(),
            computedBalance: z.string(),
            chainBalance: z.string(),
            difference: z.string(),
            checkedAt: z.string(),
          }),
        ),
      })
      .nullable()
      .openapi({
        description:
          "Payment addresses whose balance on the chain differs from the index's at the latest check (docs/accounting.md); null when the store cannot be read",
      }),
  })
  .openapi("Health");

const route = declareRoute({
  method: "get",
  path: "/",
  security: CALLERS.anyone,
  summary: "Service health: indexer head and lag per chain, store, workers",
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: HealthSchema } } },
    503: { description: "Degraded", content: { "application/json": { schema: HealthSchema } } },
  },
});

/** A worker that has not beaten for this long is reported as not alive. */
const WORKER_STALE_MS = 30_000;
/** Longest a health check waits on the store or the index. */
const CHECK_TIMEOUT_MS = 1_500;

export function healthRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>().openapi(route, async (c) => {
    // Every check is bounded: a locked store or a silent node makes health answer
    // `degraded` within seconds instead of making it wait.
    const store = await storeCheck(context.store);
    const heads = await withTimeout(context.indexed.heads(), CHECK_TIMEOUT_MS).catch(() => new Map());
    const checks = await chainChecks(context);
    const addresses = store.ok
      ? await withTimeout(
          listPaymentAddresses(context.store, { indexSchema: context.settings.indexSchema }),
          CHECK_TIMEOUT_MS,
        ).catch(() => [])
      : [];
    const watched = store.ok
      ? await withTimeout(watchedByIndexer(context.store, context.settings.indexSchema), CHECK_TIMEOUT_MS).catch(() => new Map())
      : new Map();
    const chains = context.networks.map((network) => {
      const indexed = heads.get(network.chainId)?.blockNumber as bigint | undefined;
      const check = checks.get(network.chainId);
      const { chainHead, lagBlocks } = headAndLag(indexed, check?.chainHead);
      return {
        network: network.name,
        chainId: network.chainId,
        indexedBlock: indexed?.toString() ?? null,
        chainHead: chainHead?.toString() ?? null,
        lagBlocks,
        requiredConfirmations: network.confirmations,
        node: check?.node ?? { answering: false, failingForMs: null, error: "not checked" },
        indexer: check?.indexer ?? { state: "unknown" as const, behindForMs: null },
        watchedAddresses: watched.get(network.name)?.size ?? 0,
        addressesAwaitingRestart: addresses.filter((row) => row.network === network.name && !row.watching).length,
      };
    });
    const beats = store.ok ? await withTimeout(readHeartbeats(context.store), CHECK_TIMEOUT_MS).catch(() => []) : [];
    const now = Date.now();
    const workers = beats.map((beat) => ({
      worker: beat.id,
      alive: now - Number(beat.beat_at) < WORKER_STALE_MS,
      lastBeatAt: new Date(Number(beat.beat_at)).toISOString(),
    }));
    const reasons = [
      ...store.reasons,
      ...chains.flatMap((chain) => [
        ...(chain.indexedBlock === null
          ? [
              {
                check: "index",
                network: chain.network,
                code: "index_missing",
                detail: "The indexer has not recorded this chain yet.",
              },
            ]
          : []),
        ...(checks.get(chain.chainId)?.reasons ?? []),
      ]),
    ];
    const unreconciled = store.ok
      ? await withTimeout(unreconciledChecks(context.store), CHECK_TIMEOUT_MS).catch(() => null)
      : null;
    // A mismatch between the books and the chain is never hidden: it degrades health until it is explained.
    for (const check of unreconciled ?? []) {
      reasons.push({
        check: "accounting",
        network: context.networks.find((network) => network.chainId === check.chainId)?.name,
        code: "unreconciled_address",
        detail: `${checksum(check.address)} holds ${check.chainBalance} on chain at block ${check.blockNumber}, the index accounts for ${check.computedBalance} (difference ${check.difference}).`,
      });
    }
    const relayers = await withTimeout(relayerHealth(context), CHECK_TIMEOUT_MS).catch(() => []);
    for (const relayer of relayers.filter((candidate) => candidate.belowFloor)) {
      reasons.push({
        check: "relayer",
        network: relayer.network,
        code: "relayer_balance_low",
        detail: `The relayer ${relayer.address} holds ${relayer.balanceWei} wei, under the floor of ${relayer.balanceFloorWei}: gasless payments will soon be refused; top it up.`,
      });
    }
    const healthy = reasons.length === 0;
    const reorgs = store.ok ? await withTimeout(reorgSummary(context.store), CHECK_TIMEOUT_MS).catch(() => null) : null;
    const body = {
      status: healthy ? ("ok" as const) : ("degraded" as const),
      store: { ok: store.ok, writable: store.writable },
      chains,
      workers,
      thisProcess: context.workersHere?.() ?? { workers: "off" as const, indexNotifications: "not_used" as const },
      reorgs,
      reasons,
      relayers,
      accounting:
        unreconciled === null
          ? null
          : {
              unreconciled: unreconciled.map((check) => ({
                chainId: check.chainId,
                paymentAddress: checksum(check.address),
                blockNumber: check.blockNumber.toString(),
                computedBalance: check.computedBalance.toString(),
                chainBalance: check.chainBalance.toString(),
                difference: check.difference.toString(),
                checkedAt: new Date(check.checkedAt).toISOString(),
              })),
            },
    };
    return healthy ? c.json(body, 200) : c.json(body, 503);
  });
}
