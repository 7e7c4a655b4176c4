import { randomUUID } from "node:crypto";
import { type LoadResult, runLoad } from "../support/load.js";
import type { MemorySampler } from "../support/memory.js";
import { type BenchStack, sessionBody } from "../support/service-stack.js";

export type SessionCreationResult = LoadResult & {
  created: number;
  distinctTotals: number;
  peakRssBytes: number | undefined;
};

/**
 * Session creation at one concurrency: every request a new order and
 * idempotency key. Totals rotate over `distinctTotals` values so that the
 * sub-cent reference space of one total (9,999 offsets per payment address) is
 * not what the run measures.
 */
export async function measureSessionCreation(params: {
  bench: BenchStack;
  connections: number;
  durationS: number;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<SessionCreationResult> {
  const runId = randomUUID().slice(0, 8);
  const distinctTotals = 500;
  let counter = 0;
  params.memory.begin("session-creation");
  const result = await runLoad({
    url: `${params.bench.baseUrl()}/v1/checkout/sessions`,
    connections: params.connections,
    durationS: params.durationS,
    headers: { authorization: `Bearer ${params.bench.stack.local.partner.apiKey}` },
    nextBody: () => sessionBody(runId, String((1 + (counter++ % distinctTotals)) * 1_000_000)),
  });
  const peakRssBytes = await params.memory.end("session-creation");
  params.log(`  sessions  c=${params.connections}: ${result.rps} created/s, p99 ${result.latency.p99} ms`);
  return { ...result, created: result.statusCodes["201"] ?? 0, distinctTotals, peakRssBytes };
}
