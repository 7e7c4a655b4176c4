import { createTransport, type EIP1193RequestFn, HttpRequestError, http, TimeoutError, type Transport } from "viem";
import { logJson } from "../config/redact.js";

/**
 * The indexer's JSON-RPC transport (ponder.config.ts). It exists because of how
 * Ponder 0.16.10 reacts to a node that stops answering (docs/operations.md,
 * "The indexer and the chain node"):
 *
 * - Ponder counts every `TimeoutError` as rate limiting and lowers the node's
 *   request budget by 5% each time, down to 3 requests per second. A 30 s freeze
 *   produces dozens of timeouts, so the budget collapses to 3/s.
 * - In polling mode Ponder asks for the latest block every polling interval
 *   (`setInterval`, 100 ms locally), whether or not the previous poll answered,
 *   into one unbounded first-in-first-out queue shared with block-data requests.
 *   At 3/s against 10 polls/s the queue only grows: the block data behind the
 *   polls never comes and the index stays behind for good. (With a WebSocket
 *   subscription there are no polls, so the same budget sufficed.)
 * - A block whose data fetch failed stays marked as "being fetched"; the same
 *   block polled again is skipped as a duplicate until a newer block appears.
 *
 * So this transport never lets a dead node look like a rate limit and never
 * lets a request fail merely because the node is away:
 * - a request that fails at the transport level (timeout, refused or reset
 *   connection, 502/503/504) while a probe (`eth_chainId`) also fails waits for
 *   the node to answer again and is then sent again, however long that takes;
 * - while the node is away, a poll for the latest block is answered with the
 *   last head the node gave (to Ponder, "no new block yet") instead of queuing;
 * - a failure while the node does answer probes is the request's own and goes
 *   to Ponder as it is (its retries and range splitting stay in charge); a
 *   timeout is handed over as a plain `HttpRequestError`, never a `TimeoutError`.
 */
export type IndexerTransportOptions = {
  /** Time one attempt may take before it counts as a transport failure. */
  requestTimeoutMs?: number;
  /** A latest-block poll gives up sooner: the previous head answers it meanwhile. */
  pollTimeoutMs?: number;
  /** Time a reachability probe may take. */
  probeTimeoutMs?: number;
  /** Longest pause between two probes while the node is away. */
  maxProbeIntervalMs?: number;
  /** Where to report the node going away and coming back (one line each). */
  log?: (entry: Record<string, unknown>) => void;
};

type RequestArgs = Parameters<EIP1193RequestFn>[0];

const defaultLog = (entry: Record<string, unknown>) => logJson({ level: "warn", ...entry });

export function indexerTransport(url: string, options: IndexerTransportOptions = {}): Transport {
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const pollTimeoutMs = options.pollTimeoutMs ?? 2_000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 2_000;
  const maxProbeIntervalMs = options.maxProbeIntervalMs ?? 2_000;
  const log = options.log ?? defaultLog;
  const send = (timeout: number) => http(url, { retryCount: 0, timeout })({}).request;
  const sendRequest = send(requestTimeoutMs);
  const sendPoll = send(pollTimeoutMs);
  const sendProbe = send(probeTimeoutMs);

  /** Set while the node is known to be away; resolves when it answers again. */
  let away: { since: number; back: Promise<void> } | undefined;
  /** The answer to the most recently sent latest-block poll that succeeded, per params. */
  const lastHead = new Map<string, { sentAt: number; value: unknown }>();
  /** One in-flight latest-block poll per params, shared by concurrent polls. */
  const pollsInFlight = new Map<string, Promise<unknown>>();
  let sequence = 0;

  const nodeAnswers = () =>
    sendProbe({ method: "eth_chainId" }).then(
      () => true,
      () => false,
    );

  /** Marks the node away (once) and probes until it answers. */
  const markAway = (cause: unknown): Promise<void> => {
    if (away !== undefined) return away.back;
    const since = Date.now();
    log({ msg: "Chain node not answering; indexer requests wait for it", url: redact(url), error: describe(cause) });
    const back = (async () => {
      let pause = 250;
      while (!(await nodeAnswers())) {
        await new Promise((resolve) => setTimeout(resolve, pause));
        pause = Math.min(pause * 2, maxProbeIntervalMs);
      }
      log({ msg: "Chain node answers again; indexer requests resume", url: redact(url), awayMs: Date.now() - since });
      away = undefined;
    })();
    away = { since, back };
    return back;
  };

  /** Sends until an answer or a failure that is the request's own. */
  const sendUntilAnswered = async (args: RequestArgs): Promise<unknown> => {
    for (;;) {
      if (away !== undefined) await away.back;
      try {
        return await sendRequest(args);
      } catch (error) {
        if (!isTransportFailure(error)) throw error;
        if (away === undefined && (await nodeAnswers())) throw asPlainFailure(error, url, args);
        await markAway(error);
      }
    }
  };

  const pollLatest = (args: RequestArgs, key: string): Promise<unknown> => {
    const cached = lastHead.get(key);
    if (away !== undefined && cached !== undefined) return Promise.resolve(cached.value);
    const inFlight = pollsInFlight.get(key);
    if (inFlight !== undefined) return inFlight;
    const sentAt = ++sequence;
    const poll = sendPoll(args)
      .then((value) => {
        const newest = lastHead.get(key);
        if (newest === undefined || newest.sentAt < sentAt) lastHead.set(key, { sentAt, value });
        return value;
      })
      .catch(async (error) => {
        if (!isTransportFailure(error)) throw error;
        const head = lastHead.get(key);
        if (head === undefined) return sendUntilAnswered(args);
        if (!(await nodeAnswers())) void markAway(error);
        return head.value;
      })
      .finally(() => pollsInFlight.delete(key));
    pollsInFlight.set(key, poll);
    return poll;
  };

  const request = (async (args: RequestArgs) => {
    if (isLatestBlockPoll(args)) return pollLatest(args, JSON.stringify(args.params ?? []));
    return sendUntilAnswered(args);
  }) as EIP1193RequestFn;

  return ({ retryCount } = {}) =>
    createTransport({
      key: "indexer",
      name: "Indexer JSON-RPC",
      type: "indexer",
      request,
      retryCount: retryCount ?? 0,
      timeout: requestTimeoutMs,
    });
}

function isLatestBlockPoll(args: RequestArgs): boolean {
  const params = args.params as unknown[] | undefined;
  return args.method === "eth_getBlockByNumber" && params?.[0] === "latest";
}

/** A failure of the way to the node, not an answer from it. */
export function isTransportFailure(error: unknown): boolean {
  if (error instanceof TimeoutError) return true;
  if (error instanceof HttpRequestError) return error.status === undefined || [502, 503, 504].includes(error.status);
  return false;
}

/** Ponder reads a `TimeoutError` as rate limiting; hand it a plain HTTP failure instead. */
function asPlainFailure(error: unknown, url: string, args: RequestArgs): unknown {
  if (!(error instanceof TimeoutError)) return error;
  return new HttpRequestError({ url, body: { method: args.method, params: args.params }, details: "The request timed out." });
}

function describe(error: unknown): string {
  return error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error);
}

/** RPC URLs often carry an API key in the path or query: log the origin only. */
export function redact(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid url)";
  }
}
