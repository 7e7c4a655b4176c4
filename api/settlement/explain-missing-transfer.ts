import { LRUCache } from "lru-cache";
import { erc20Abi, type Hex, type PublicClient, parseEventLogs, TransactionReceiptNotFoundError } from "viem";
import { ProblemError } from "../http/problem.js";
import { isRpcUnavailable, unavailableProblems } from "../http/unavailable-problems.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { indexForm } from "../values/checksum-address.js";

/**
 * What one RPC look-up says about a hash the index does not hold: the facts of
 * the transaction, never a verdict on a session. The caller judges them with the
 * same rules as an indexed transfer, so the cached facts serve every session.
 */
export type ReceiptFacts =
  | { found: false }
  | { found: true; reverted: true }
  | {
      found: true;
      reverted: false;
      /** Every ERC-20 `Transfer` the transaction emitted, of any token, shaped as the indexer records them. */
      transfers: IndexedTransfer[];
    };

const MAX_ENTRIES = 10_000;
/**
 * How long one look-up (receipt and block) may take in all. The client's own
 * timeout and retry would hold a customer's submission for many seconds when the
 * node is away; past this it is `503 rpc_unavailable`, which the customer may retry.
 */
export const RECEIPT_LOOKUP_TIMEOUT_MS = 3_000;
/** Receipt look-ups one checkout session may cause per minute; cached answers are free. */
const LOOKUPS_PER_SESSION_PER_MINUTE = 10;
/** "Not found" may be a transaction still in the mempool; a mined one is soon in the index. */
const NOT_FOUND_TTL_MS = 15_000;
const FOUND_TTL_MS = 60_000;

/**
 * Looks a hash up with at most one receipt (and, for a successful one, its block's
 * timestamp) per (chain, hash) in a while, whichever session asks.
 */
export function createMissingTransferExplainer() {
  // Least recently used entries go first once full; each answer keeps its own TTL.
  const cache = new LRUCache<string, ReceiptFacts>({ max: MAX_ENTRIES });
  const lookupsBySession = new LRUCache<string, number[]>({ max: MAX_ENTRIES });
  let rpcCalls = 0;

  /** Random hashes must not turn the public submission route into an RPC amplifier. */
  const allowLookup = (sessionId: string) => {
    const now = Date.now();
    const recent = (lookupsBySession.get(sessionId) ?? []).filter((at) => now - at < 60_000);
    if (recent.length >= LOOKUPS_PER_SESSION_PER_MINUTE) return false;
    recent.push(now);
    lookupsBySession.set(sessionId, recent);
    return true;
  };

  return {
    get rpcCalls() {
      return rpcCalls;
    },
    async lookUp(params: {
      client: PublicClient;
      chainId: number;
      sessionId: string;
      transactionHash: Hex;
    }): Promise<ReceiptFacts> {
      const key = `${params.chainId}:${params.transactionHash}`;
      const cached = cache.get(key);
      if (cached !== undefined) return cached;

      if (!allowLookup(params.sessionId)) {
        throw new ProblemError({
          code: "rate_limited",
          title: "Too many look-ups",
          detail: "This checkout has asked about too many unknown transactions; wait a minute and check the hash.",
        });
      }
      const value = await bounded(readReceipt(params, () => rpcCalls++));
      cache.set(key, value, { ttl: value.found ? FOUND_TTL_MS : NOT_FOUND_TTL_MS });
      return value;
    },
  };
}

async function readReceipt(
  params: { client: PublicClient; chainId: number; transactionHash: Hex },
  countCall: () => void,
): Promise<ReceiptFacts> {
  let receipt: Awaited<ReturnType<PublicClient["getTransactionReceipt"]>>;
  try {
    countCall();
    receipt = await params.client.getTransactionReceipt({ hash: params.transactionHash });
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return { found: false };
    throw error;
  }
  if (receipt.status !== "success") return { found: true, reverted: true };
  const logs = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: receipt.logs, strict: false });
  if (logs.length === 0) return { found: true, reverted: false, transfers: [] };
  // The settlement rules need the block's time (late, predates the session).
  countCall();
  const block = await params.client.getBlock({ blockNumber: receipt.blockNumber });
  const transfers: IndexedTransfer[] = logs.flatMap((log) =>
    log.args.from === undefined || log.args.to === undefined || log.args.value === undefined
      ? []
      : [
          {
            chainId: params.chainId,
            transactionHash: indexForm(receipt.transactionHash),
            logIndex: log.logIndex,
            token: indexForm(log.address),
            from: indexForm(log.args.from),
            to: indexForm(log.args.to),
            value: log.args.value,
            blockNumber: receipt.blockNumber,
            blockHash: receipt.blockHash,
            blockTimestamp: block.timestamp,
            transactionIndex: receipt.transactionIndex,
          },
        ],
  );
  return { found: true, reverted: false, transfers };
}

/** The look-up within {@link RECEIPT_LOOKUP_TIMEOUT_MS}; the node's absence becomes `503 rpc_unavailable`. */
async function bounded<value>(lookUp: Promise<value>): Promise<value> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      lookUp,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(unavailableProblems.rpc()), RECEIPT_LOOKUP_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    if (isRpcUnavailable(error)) throw unavailableProblems.rpc();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
