import type { AppContext } from "../app-context.js";
import type { NetworkConfig } from "../config/networks.js";
import { problem } from "../http/problem.js";

/**
 * Accounting ranges, one parser for the API and the CLI (docs/accounting.md,
 * "Ranges"): `fromBlock`/`toBlock` (both inclusive) or `from`/`to` (ISO 8601, `from`
 * inclusive, `to` exclusive, resolved to blocks by block timestamp), on one chain
 * (`chainId`, needed only when several networks are enabled).
 */
export const MAX_RANGE_BLOCKS = 16_000_000n;
/** 366 days: a year's books, leap day included. */
export const MAX_RANGE_MS = 366 * 24 * 60 * 60 * 1000;

export type RangeQuery = { chainId?: string; fromBlock?: string; toBlock?: string; from?: string; to?: string };

export type ParsedRange =
  | { chainId: number | undefined; basis: "blocks"; fromBlock: bigint; toBlock: bigint }
  | { chainId: number | undefined; basis: "times"; fromTime: number; toTime: number };

/** A range on one chain: blocks [fromBlock, toBlock] (empty when toBlock < fromBlock) and instants [fromTime, toTime) in epoch ms. */
export type ResolvedRange = {
  network: NetworkConfig;
  chainId: number;
  fromBlock: bigint;
  toBlock: bigint;
  fromTime: number;
  toTime: number;
};

const invalid = (detail: string) => problem("invalid_range", detail);

const BLOCK = /^\d{1,19}$/;
/** A date, or a date and time with seconds optional, fraction optional, and a zone (Z or ±hh:mm). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

function parseBlock(name: string, value: string): bigint {
  if (!BLOCK.test(value)) throw invalid(`\`${name}\` must be a block number in decimal digits.`);
  const block = BigInt(value);
  if (block > 2n ** 63n - 1n) throw invalid(`\`${name}\` is beyond any block.`);
  return block;
}

/** Whether the `yyyy-mm-dd` a time starts with is a day of the calendar (`Date.parse` reads 2026-02-30 as March 2). */
function isCalendarDay(value: string): boolean {
  const [year, month, day] = value.slice(0, 10).split("-").map(Number) as [number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function parseTime(name: string, value: string): number {
  const time = ISO_TIME.test(value) && isCalendarDay(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(time))
    throw invalid(`\`${name}\` must be an ISO 8601 time such as 2026-01-01T00:00:00Z (or a date, read as UTC midnight).`);
  return time;
}

/** Validates a range as given (pure): one kind, both ends, in order, within the maximum width. */
export function parseRange(query: RangeQuery): ParsedRange {
  let chainId: number | undefined;
  if (query.chainId !== undefined) {
    if (!/^\d{1,10}$/.test(query.chainId)) throw invalid("`chainId` must be a chain id in decimal digits.");
    chainId = Number(query.chainId);
  }
  const blocks = query.fromBlock !== undefined || query.toBlock !== undefined;
  const times = query.from !== undefined || query.to !== undefined;
  if (blocks && times) throw invalid("Give either `fromBlock`/`toBlock` or `from`/`to`, not both.");
  if (blocks) {
    if (query.fromBlock === undefined || query.toBlock === undefined) throw invalid("Give both `fromBlock` and `toBlock`.");
    const fromBlock = parseBlock("fromBlock", query.fromBlock);
    const toBlock = parseBlock("toBlock", query.toBlock);
    if (toBlock < fromBlock) throw invalid("`toBlock` is before `fromBlock`.");
    if (toBlock - fromBlock + 1n > MAX_RANGE_BLOCKS)
      throw problem("range_too_wide", `A range covers at most ${MAX_RANGE_BLOCKS} blocks; ask for the period in parts.`);
    return { chainId, basis: "blocks", fromBlock, toBlock };
  }
  if (times) {
    if (query.from === undefined || query.to === undefined) throw invalid("Give both `from` and `to`.");
    const fromTime = parseTime("from", query.from);
    const toTime = parseTime("to", query.to);
    if (toTime <= fromTime) throw invalid("`to` must be after `from` (`to` is exclusive).");
    if (toTime - fromTime > MAX_RANGE_MS)
      throw problem("range_too_wide", "A range covers at most 366 days; ask for the period in parts.");
    return { chainId, basis: "times", fromTime, toTime };
  }
  throw invalid("A range is required: `fromBlock` and `toBlock`, or `from` and `to`.");
}

/** The enabled network a range is on: the one named, or the only one. */
export function rangeNetwork(networks: readonly NetworkConfig[], chainId: number | undefined): NetworkConfig {
  if (chainId === undefined) {
    if (networks.length === 1) return networks[0] as NetworkConfig;
    throw invalid(`Several networks are enabled: name one with \`chainId\` (${networks.map((n) => n.chainId).join(", ")}).`);
  }
  const network = networks.find((candidate) => candidate.chainId === chainId);
  if (network === undefined)
    throw invalid(`Chain ${chainId} is not enabled here (${networks.map((n) => n.chainId).join(", ")}).`);
  return network;
}

/** Block timestamps (seconds) are immutable once final; a small cache spares repeated binary searches their RPC calls. */
const timestampCache = new Map<string, bigint>();
const TIMESTAMP_CACHE_SIZE = 10_000;

export type BlockClock = (blockNumber: bigint) => Promise<bigint>;

function blockClock(context: Pick<AppContext, "rpc">, chainId: number): BlockClock {
  const client = context.rpc.get(chainId);
  return async (blockNumber) => {
    const key = `${chainId}:${blockNumber}`;
    const cached = timestampCache.get(key);
    if (cached !== undefined) return cached;
    if (client === undefined) throw new Error(`no RPC client for chain ${chainId}`);
    const block = await client.getBlock({ blockNumber });
    if (timestampCache.size >= TIMESTAMP_CACHE_SIZE) timestampCache.delete(timestampCache.keys().next().value as string);
    timestampCache.set(key, block.timestamp);
    return block.timestamp;
  };
}

/** The first block in [low, high] whose timestamp is at or after `seconds`; high + 1 when none (timestamps never decrease). */
export async function firstBlockAtOrAfter(clock: BlockClock, seconds: bigint, low: bigint, high: bigint): Promise<bigint> {
  if (low > high || (await clock(high)) < seconds) return high + 1n;
  let lo = low;
  let hi = high;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if ((await clock(mid)) >= seconds) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

const ceilSeconds = (ms: number) => BigInt(Math.ceil(ms / 1000));

/**
 * Puts a range on its chain's blocks. A block range must lie within what is indexed
 * (`range_not_indexed`); a time range is clipped to it (the answer names the blocks
 * it covered), so "this month so far" ends at the indexed head.
 */
export async function resolveRange(
  context: Pick<AppContext, "networks" | "indexed" | "rpc">,
  parsed: ParsedRange,
  clockOf: (chainId: number) => BlockClock = (chainId) => blockClock(context, chainId),
): Promise<ResolvedRange> {
  const network = rangeNetwork(context.networks, parsed.chainId);
  const head = (await context.indexed.heads()).get(network.chainId)?.blockNumber;
  const start = BigInt(network.startBlock);
  if (head === undefined) throw problem("range_not_indexed", "The indexer has not recorded this chain yet.");
  const clock = clockOf(network.chainId);
  if (parsed.basis === "blocks") {
    if (parsed.fromBlock < start || parsed.toBlock > head)
      throw problem("range_not_indexed", `The index holds blocks ${start} to ${head} of chain ${network.chainId}.`);
    const [first, last] = await Promise.all([clock(parsed.fromBlock), clock(parsed.toBlock)]);
    return {
      network,
      chainId: network.chainId,
      fromBlock: parsed.fromBlock,
      toBlock: parsed.toBlock,
      fromTime: Number(first) * 1000,
      toTime: (Number(last) + 1) * 1000,
    };
  }
  const fromBlock = await firstBlockAtOrAfter(clock, ceilSeconds(parsed.fromTime), start, head);
  const toBlock = (await firstBlockAtOrAfter(clock, ceilSeconds(parsed.toTime), fromBlock, head)) - 1n;
  return { network, chainId: network.chainId, fromBlock, toBlock, fromTime: parsed.fromTime, toTime: parsed.toTime };
}
