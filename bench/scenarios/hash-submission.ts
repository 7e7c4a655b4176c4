import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BaselineTargets } from "../baseline-verifier.js";
import { readProxyStats, resetProxyStats } from "../rpc-delay-proxy.js";
import { type LoadResult, runLoad } from "../support/load.js";
import { type MemorySampler, startMemorySampler } from "../support/memory.js";
import { type ChildServer, startChildServer } from "../support/processes.js";
import type { BenchStack } from "../support/service-stack.js";
import { sleep } from "../support/stats.js";
import type { Purchase } from "./settlement-latency.js";

export type VerifierRun = LoadResult & {
  /** RPC calls per verified (2xx) payment; for the service: eth_getTransactionReceipt only. */
  rpcCallsPerVerified: number;
  rpcCalls: Record<string, number>;
};

export type HashSubmissionResult = {
  targets: number;
  precheck: { submitted: number; settled: number; other: Record<string, number>; receiptCalls: number };
  rpcDelayMs: number;
  service: VerifierRun[];
  baselineDirect: VerifierRun[];
  baselineDelayed: VerifierRun[];
  /** For scale: Ponder's own GET /status (one read of the index database, none of our code) at the highest concurrency. */
  ponderStatusReference: LoadResult;
  peakRssBytes: { service?: number; baselineDirect?: number; baselineDelayed?: number };
  goals: {
    p99UnderMsAt64: number;
    p99At64: number | undefined;
    p99Met: boolean;
    zeroRpcOnHitPath: boolean;
    throughputRatioVsDelayedBaseline: Record<string, number>;
    severalTimesDelayedBaseline: boolean;
  };
};

const SERVICE_RECEIPT_METHOD = "eth_getTransactionReceipt";

async function baselineStats(url: string): Promise<{ rpcCalls: number; verified: number }> {
  const response = await fetch(`${url}/__stats`);
  return (await response.json()) as { rpcCalls: number; verified: number };
}

/**
 * Hash submission on the hit path: already indexed, already settled payments
 * submitted again (the idempotent answer "settled"), against the service and
 * against the per-request-RPC baseline, direct and through a delaying proxy.
 */
export async function measureHashSubmission(params: {
  bench: BenchStack;
  purchases: Purchase[];
  concurrencies: number[];
  durationS: number;
  rpcDelayMs: number;
  requiredConfirmations: number;
  workDir: string;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<HashSubmissionResult> {
  const { bench, log } = params;
  const targets = params.purchases.map((purchase) => ({
    clientToken: purchase.session.clientToken,
    transactionHash: purchase.transactionHash,
  }));
  if (targets.length === 0) throw new Error("no settled payment to submit");
  let cursor = 0;
  const nextBody = () => targets[cursor++ % targets.length];

  // Every target once, by hand: each must answer "settled" without an RPC look-up.
  await resetProxyStats(bench.serviceRpcCounter.url);
  const other: Record<string, number> = {};
  let settled = 0;
  for (const target of targets) {
    const response = await fetch(`${bench.baseUrl()}/v1/public/checkout/payments`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(target),
    });
    const body = (await response.json()) as { status?: string; code?: string };
    if (response.status === 200 && body.status === "settled") settled++;
    else {
      const key = `${response.status} ${body.status ?? body.code ?? ""}`.trim();
      other[key] = (other[key] ?? 0) + 1;
    }
  }
  const precheckReceipts = (await readProxyStats(bench.serviceRpcCounter.url)).calls[SERVICE_RECEIPT_METHOD] ?? 0;
  log(`  precheck: ${settled}/${targets.length} answered "settled", ${precheckReceipts} receipt look-ups`);

  const service: VerifierRun[] = [];
  params.memory.begin("hash-submission");
  for (const connections of params.concurrencies) {
    await resetProxyStats(bench.serviceRpcCounter.url);
    const result = await runLoad({
      url: `${bench.baseUrl()}/v1/public/checkout/payments`,
      connections,
      durationS: params.durationS,
      nextBody,
    });
    const stats = await readProxyStats(bench.serviceRpcCounter.url);
    const receiptCalls = stats.calls[SERVICE_RECEIPT_METHOD] ?? 0;
    service.push({ ...result, rpcCalls: stats.calls, rpcCallsPerVerified: result.ok === 0 ? 0 : receiptCalls / result.ok });
    log(`  service   c=${connections}: ${result.rps} req/s, p99 ${result.latency.p99} ms, ${receiptCalls} receipt calls`);
  }
  const servicePeak = await params.memory.end("hash-submission");
  const highest = Math.max(...params.concurrencies);
  const ponderStatusReference = await runLoad({
    url: `${bench.baseUrl()}/status`,
    connections: highest,
    durationS: params.durationS,
  });
  log(
    `  ponder /status c=${highest}: ${ponderStatusReference.rps} req/s, p99 ${ponderStatusReference.latency.p99} ms (reference)`,
  );

  const targetsFile = join(params.workDir, "baseline-targets.json");
  const baselineTargets: BaselineTargets = {
    tokenAddress: bench.stack.local.contracts.usdc,
    requiredConfirmations: params.requiredConfirmations,
    sessions: Object.fromEntries(
      params.purchases.map((purchase) => [
        purchase.session.clientToken,
        { recipient: purchase.session.payment.recipient, amount: purchase.session.payment.amount },
      ]),
    ),
  };
  writeFileSync(targetsFile, JSON.stringify(baselineTargets));

  const runBaseline = async (rpcUrl: string, label: string, counter: ChildServer | undefined) => {
    const baseline = await startChildServer("baseline-verifier.ts", { RPC_URL: rpcUrl, TARGETS_FILE: targetsFile });
    const sampler = startMemorySampler();
    sampler.watch(baseline.process.pid);
    sampler.begin(label);
    const runs: VerifierRun[] = [];
    try {
      for (const connections of params.concurrencies) {
        const before = await baselineStats(baseline.url);
        if (counter !== undefined) await resetProxyStats(counter.url);
        const result = await runLoad({
          url: `${baseline.url}/v1/public/checkout/payments`,
          connections,
          durationS: params.durationS,
          nextBody,
        });
        // Requests still in flight when autocannon stopped finish on the server: let them, then count.
        await sleep(params.rpcDelayMs * 4 + 500);
        const after = await baselineStats(baseline.url);
        const calls =
          counter !== undefined ? (await readProxyStats(counter.url)).calls : { all: after.rpcCalls - before.rpcCalls };
        const total = Object.values(calls).reduce((sum, value) => sum + value, 0);
        const verified = after.verified - before.verified;
        runs.push({ ...result, rpcCalls: calls, rpcCallsPerVerified: verified === 0 ? 0 : total / verified });
        log(`  ${label.padEnd(9)} c=${connections}: ${result.rps} req/s, p99 ${result.latency.p99} ms`);
      }
      return { runs, peak: await sampler.end(label) };
    } finally {
      await sampler.stop();
      await baseline.stop();
    }
  };

  const direct = await runBaseline(bench.anvilUrl, "baseline", undefined);
  const delayProxy = await startChildServer("rpc-delay-proxy.ts", {
    RPC_PROXY_TARGET: bench.anvilUrl,
    RPC_DELAY_MS: String(params.rpcDelayMs),
  });
  let delayed: Awaited<ReturnType<typeof runBaseline>>;
  try {
    delayed = await runBaseline(delayProxy.url, `baseline+${params.rpcDelayMs}ms`, delayProxy);
  } finally {
    await delayProxy.stop();
  }

  const at64 = service.find((run) => run.connections === 64);
  const ratios = Object.fromEntries(
    service.map((run) => {
      const base = delayed.runs.find((candidate) => candidate.connections === run.connections);
      return [
        `c${run.connections}`,
        base === undefined || base.rps === 0 ? Number.NaN : Math.round((run.rps / base.rps) * 10) / 10,
      ];
    }),
  );
  const p99Goal = 20;
  return {
    targets: targets.length,
    precheck: { submitted: targets.length, settled, other, receiptCalls: precheckReceipts },
    rpcDelayMs: params.rpcDelayMs,
    service,
    baselineDirect: direct.runs,
    baselineDelayed: delayed.runs,
    ponderStatusReference,
    peakRssBytes: { service: servicePeak, baselineDirect: direct.peak, baselineDelayed: delayed.peak },
    goals: {
      p99UnderMsAt64: p99Goal,
      p99At64: at64?.latency.p99,
      p99Met: at64 !== undefined && at64.latency.p99 < p99Goal,
      zeroRpcOnHitPath: precheckReceipts === 0 && service.every((run) => (run.rpcCalls[SERVICE_RECEIPT_METHOD] ?? 0) === 0),
      throughputRatioVsDelayedBaseline: ratios,
      // "Several times": at least 3x at every concurrency measured.
      severalTimesDelayedBaseline: Object.values(ratios).every((ratio) => ratio >= 3),
    },
  };
}
