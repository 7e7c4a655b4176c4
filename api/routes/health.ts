import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import type { AppContext } from "../app-context.js";
import { reorgSummary } from "../settlement/reorg-watch.js";
import type { AppEnv } from "./app-env.js";

const HealthSchema = z
  .object({
    status: z.enum(["ok", "degraded"]),
    store: z.object({ ok: z.boolean() }),
    chains: z.array(
      z.object({
        network: z.string(),
        chainId: z.number().int(),
        indexedBlock: z.string().nullable(),
        chainHead: z.string().nullable(),
        lagBlocks: z.number().int().nullable(),
        requiredConfirmations: z.number().int(),
      }),
    ),
    workers: z.array(z.object({ worker: z.string(), alive: z.boolean(), lastBeatAt: z.string() })),
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
  })
  .openapi("Health");

const route = createRoute({
  method: "get",
  path: "/",
  summary: "Service health: indexer head and lag per chain, store, workers",
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: HealthSchema } } },
    503: { description: "Degraded", content: { "application/json": { schema: HealthSchema } } },
  },
});

/** A worker that has not beaten for this long is reported as not alive. */
const WORKER_STALE_MS = 30_000;

export function healthRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>().openapi(route, async (c) => {
    const storeOk = await sql`select 1 as ok`
      .execute(context.store)
      .then(() => true)
      .catch(() => false);
    const heads = await context.indexed.heads().catch(() => new Map());
    const chains = await Promise.all(
      context.networks.map(async (network) => {
        const indexed = heads.get(network.chainId)?.blockNumber as bigint | undefined;
        const chainHead = await context.rpc
          .get(network.chainId)
          ?.getBlockNumber({ cacheTime: 2_000 })
          .catch(() => undefined);
        return {
          network: network.name,
          chainId: network.chainId,
          indexedBlock: indexed?.toString() ?? null,
          chainHead: chainHead?.toString() ?? null,
          lagBlocks: indexed !== undefined && chainHead !== undefined ? Number(chainHead - indexed) : null,
          requiredConfirmations: network.confirmations,
        };
      }),
    );
    const beats = storeOk ? await context.store.selectFrom("worker_heartbeat").selectAll().execute() : [];
    const now = Date.now();
    const workers = beats.map((beat) => ({
      worker: beat.id,
      alive: now - Number(beat.beat_at) < WORKER_STALE_MS,
      lastBeatAt: new Date(Number(beat.beat_at)).toISOString(),
    }));
    const healthy = storeOk && chains.every((chain) => chain.indexedBlock !== null);
    const reorgs = storeOk ? await reorgSummary(context.store).catch(() => null) : null;
    const body = { status: healthy ? ("ok" as const) : ("degraded" as const), store: { ok: storeOk }, chains, workers, reorgs };
    return healthy ? c.json(body, 200) : c.json(body, 503);
  });
}
