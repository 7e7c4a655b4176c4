import {
  createTransport,
  type EIP1193RequestFn,
  HttpRequestError,
  http,
  ResponseBodyTooLargeError,
  TimeoutError,
  type Transport,
} from "viem";
import { logJson } from "../logging/redact.js";
import { noteChainActivity, noteIndexerTransport } from "./chain-activity.js";

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
 *
 * And it never lets one large `eth_getLogs` answer stop the indexer (issue 30):
 * viem refuses an HTTP answer over 10 MiB (`ResponseBodyTooLargeError`); Ponder
 * 0.16.10 does not recognise that error as a range problem, retries the same
 * range and then shuts down (exit 75), so the index never starts. Here:
 * - an `eth_getLogs` over a block range whose answer is too large is asked again
 *   as two halves (recursively) and the logs are merged in order; the widest span
 *   that has to be split is remembered, and later ranges wider than that are split
 *   before they are sent (the span grows back by 5% per answer, as Ponder's own
 *   estimate does);
 * - a single block (or a `blockHash` query) cannot be split: it is asked once more
 *   with a larger limit (`maxLogsResponseBytes`, 256 MiB by default).
 * Ponder keeps choosing its ranges (and splitting on the node's own range errors);
 * it only ever sees complete answers.
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
  /** viem's limit on one answer (10 MiB); a larger `eth_getLogs` range is split. */
  maxResponseBytes?: number;
  /** The limit for a single block's logs, which cannot be split further. */
  maxLogsResponseBytes?: number;
};

type RequestArgs = Parameters<EIP1193RequestFn>[0];

const defaultLog = (entry: Record<string, unknown>) => logJson({ level: "warn", ...entry });

export function indexerTransport(url: string, options: IndexerTransportOptions = {}): Transport {
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const pollTimeoutMs = options.pollTimeoutMs ?? 2_000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 2_000;
  const maxProbeIntervalMs = options.maxProbeIntervalMs ?? 2_000;
  const log = options.log ?? defaultLog;
  const maxResponseBytes = options.maxResponseBytes ?? 10 * 1024 * 1024;
  const maxLogsResponseBytes = options.maxLogsResponseBytes ?? 256 * 1024 * 1024;
  const send = (timeout: number, maxResponseBodySize = maxResponseBytes) =>
    http(url, { retryCount: 0, timeout, maxResponseBodySize })({}).request;
  const sendRequest = send(requestTimeoutMs);
  const sendLarge = send(requestTimeoutMs * 3, maxLogsResponseBytes);
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
  const sendUntilAnswered = async (args: RequestArgs, sender = sendRequest): Promise<unknown> => {
    for (;;) {
      if (away !== undefined) await away.back;
      try {
        return await sender(args);
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

  /** The widest block span known to answer within the limit (undefined: none was too large yet). */
  let logsSpan: number | undefined;

  const getLogs = async (args: RequestArgs): Promise<unknown> => {
    const filter = (args.params as [LogsFilter] | undefined)?.[0];
    const range = blockRangeOf(filter);
    if (filter === undefined || range === undefined) return getLogsOfOneBlock(args);
    const span = range.to - range.from + 1;
    if (span <= 1) return getLogsOfOneBlock(args);
    if (logsSpan !== undefined && span > logsSpan) return getLogsInParts(filter, range, Math.max(1, Math.floor(logsSpan)));
    try {
      const logs = await sendUntilAnswered(args);
      if (logsSpan !== undefined) logsSpan = logsSpan * 1.05;
      return logs;
    } catch (error) {
      if (!(error instanceof ResponseBodyTooLargeError)) throw error;
      const half = Math.ceil(span / 2);
      logsSpan = Math.min(logsSpan ?? half, half);
      log({
        msg: "eth_getLogs answer over the response limit; asking again in smaller ranges",
        url: redact(url),
        fromBlock: range.from,
        toBlock: range.to,
        maxBytes: maxResponseBytes,
        nextSpan: half,
      });
      return getLogsInParts(filter, range, half);
    }
  };

  /** The range in consecutive parts of at most `part` blocks, one after the other, logs merged in order. */
  const getLogsInParts = async (filter: LogsFilter, range: BlockRange, part: number): Promise<unknown[]> => {
    const merged: unknown[] = [];
    for (let from = range.from; from <= range.to; from += part) {
      const to = Math.min(range.to, from + part - 1);
      const logs = (await getLogs({
        method: "eth_getLogs",
        params: [{ ...filter, fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }],
      } as RequestArgs)) as unknown[];
      for (const entry of logs) merged.push(entry);
    }
    return merged;
  };

  /** One block's logs cannot be split: ask once more with the larger limit. */
  const getLogsOfOneBlock = async (args: RequestArgs): Promise<unknown> => {
    try {
      return await sendUntilAnswered(args);
    } catch (error) {
      if (!(error instanceof ResponseBodyTooLargeError)) throw error;
      log({
        msg: "eth_getLogs answer for one block over the response limit; asking again with the larger limit",
        url: redact(url),
        maxBytes: maxLogsResponseBytes,
      });
      return sendUntilAnswered(args, sendLarge);
    }
  };

  /** The hash of the latest block the last poll answered: a different one is a new block (chain-activity.ts). */
  let latestHash: unknown;
  const request = (async (args: RequestArgs) => {
    if (isLatestBlockPoll(args)) {
      const block = await pollLatest(args, JSON.stringify(args.params ?? []));
      const hash = (block as { hash?: unknown } | null)?.hash;
      if (hash !== latestHash) {
        latestHash = hash;
        noteChainActivity();
      }
      return block;
    }
    noteChainActivity();
    if (args.method === "eth_getLogs") return getLogs(args);
    return sendUntilAnswered(args);
  }) as EIP1193RequestFn;
  noteIndexerTransport();

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

type LogsFilter = { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown } & Record<string, unknown>;
type BlockRange = { from: number; to: number };

/** A numeric block range (hex numbers both ends), or undefined for tags and `blockHash` queries. */
export function blockRangeOf(filter: LogsFilter | undefined): BlockRange | undefined {
  if (filter === undefined || filter.blockHash !== undefined) return undefined;
  const { fromBlock, toBlock } = filter;
  if (typeof fromBlock !== "string" || typeof toBlock !== "string") return undefined;
  if (!/^0x[0-9a-f]+$/i.test(fromBlock) || !/^0x[0-9a-f]+$/i.test(toBlock)) return undefined;
  const from = Number.parseInt(fromBlock, 16);
  const to = Number.parseInt(toBlock, 16);
  return to >= from ? { from, to } : undefined;
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
