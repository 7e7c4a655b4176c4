import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import { round, summarize } from "./stats.js";

export type LoadResult = {
  connections: number;
  durationS: number;
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Successful (2xx) responses per second over the whole run. */
  rps: number;
  /** Latency of 2xx responses, ms, measured per response (sub-millisecond). */
  latency: { p50: number; p95: number; p99: number; max: number; mean: number };
};

/**
 * One bounded autocannon run: POSTs JSON bodies from `nextBody()` (called per
 * request, so each request may differ) for `durationS` seconds.
 */
export async function runLoad(params: {
  url: string;
  connections: number;
  durationS: number;
  /** A JSON body per request (POST); omitted: GET. */
  nextBody?: () => unknown;
  headers?: Record<string, string>;
}): Promise<LoadResult> {
  const nextBody = params.nextBody;
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  const started = performance.now();
  let instance: autocannon.Instance | undefined;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: params.url,
        connections: params.connections,
        duration: params.durationS,
        timeout: 10,
        headers: { "content-type": "application/json", ...params.headers },
        requests: [
          nextBody === undefined
            ? { method: "GET" }
            : { method: "POST", setupRequest: (request) => ({ ...request, body: JSON.stringify(nextBody()) }) },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
  instance?.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await done;
  const elapsedS = (performance.now() - started) / 1000;
  const ok = latencies.length;
  const summary = summarize(latencies);
  return {
    connections: params.connections,
    durationS: round(elapsedS),
    requests: Object.values(statusCodes).reduce((total, value) => total + value, 0),
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    rps: Math.round(ok / elapsedS),
    latency: {
      p50: round(summary.p50),
      p95: round(summary.p95),
      p99: round(summary.p99),
      max: round(summary.max),
      mean: round(summary.mean),
    },
  };
}
