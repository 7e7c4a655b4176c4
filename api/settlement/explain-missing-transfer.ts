import { erc20Abi, type Hex, type PublicClient, parseEventLogs, TransactionReceiptNotFoundError } from "viem";
import { ProblemError } from "../http/problem.js";
import type { CheckoutSessionTable } from "../store/database.js";

/** What one RPC receipt look-up says about a hash the index does not hold. */
export type MissingTransferExplanation =
  | { reason: "not_found" | "reverted" | "wrong_token" | "wrong_recipient" | "wrong_amount" }
  /** A canonical transfer to the session's address the indexer has not reached yet. */
  | { reason: "not_yet_indexed"; blockNumber: bigint };

type CacheEntry = { value: MissingTransferExplanation; expiresAt: number };
const MAX_ENTRIES = 10_000;
/** Receipt look-ups one checkout session may cause per minute; cached answers are free. */
const LOOKUPS_PER_SESSION_PER_MINUTE = 10;

/**
 * Explains a miss with at most one `eth_getTransactionReceipt` per (chain, hash)
 * in a while: final answers are cached for 10 minutes, "not found" for 15 s (the
 * transaction may still be in the mempool), "not yet indexed" for 2 s.
 */
export function createMissingTransferExplainer() {
  const cache = new Map<string, CacheEntry>();
  const lookupsBySession = new Map<string, number[]>();
  let rpcCalls = 0;

  /** Random hashes must not turn the public submission route into an RPC amplifier. */
  const allowLookup = (sessionId: string) => {
    const now = Date.now();
    const recent = (lookupsBySession.get(sessionId) ?? []).filter((at) => now - at < 60_000);
    if (recent.length >= LOOKUPS_PER_SESSION_PER_MINUTE) return false;
    recent.push(now);
    lookupsBySession.set(sessionId, recent);
    if (lookupsBySession.size > MAX_ENTRIES) lookupsBySession.delete(lookupsBySession.keys().next().value as string);
    return true;
  };

  return {
    get rpcCalls() {
      return rpcCalls;
    },
    async explain(params: {
      client: PublicClient;
      session: CheckoutSessionTable;
      transactionHash: Hex;
    }): Promise<MissingTransferExplanation> {
      const key = `${params.session.chain_id}:${params.transactionHash}:${params.session.payment_address}:${params.session.token_address}`;
      const cached = cache.get(key);
      if (cached !== undefined && cached.expiresAt > Date.now()) return cached.value;

      if (!allowLookup(params.session.id)) {
        throw new ProblemError({
          status: 429,
          code: "rate_limited",
          title: "Too many look-ups",
          detail: "This checkout has asked about too many unknown transactions; wait a minute and check the hash.",
        });
      }
      rpcCalls++;
      const value = await lookUp(params);
      const ttl = value.reason === "not_found" ? 15_000 : value.reason === "not_yet_indexed" ? 2_000 : 600_000;
      cache.delete(key);
      cache.set(key, { value, expiresAt: Date.now() + ttl });
      if (cache.size > MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
      return value;
    },
  };
}

async function lookUp(params: {
  client: PublicClient;
  session: CheckoutSessionTable;
  transactionHash: Hex;
}): Promise<MissingTransferExplanation> {
  let receipt: Awaited<ReturnType<PublicClient["getTransactionReceipt"]>>;
  try {
    receipt = await params.client.getTransactionReceipt({ hash: params.transactionHash });
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return { reason: "not_found" };
    throw error;
  }
  if (receipt.status !== "success") return { reason: "reverted" };
  const transfers = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: receipt.logs, strict: false });
  const recipient = params.session.payment_address;
  const token = params.session.token_address;
  const canonical = transfers.filter((log) => log.address.toLowerCase() === token);
  const toRecipient = canonical.filter((log) => log.args.to?.toLowerCase() === recipient);
  if (toRecipient.some((log) => log.args.value?.toString() === params.session.amount_due)) {
    return { reason: "not_yet_indexed", blockNumber: receipt.blockNumber };
  }
  if (toRecipient.length > 0) return { reason: "wrong_amount" };
  if (transfers.some((log) => log.address.toLowerCase() !== token && log.args.to?.toLowerCase() === recipient)) {
    return { reason: "wrong_token" };
  }
  if (canonical.length > 0) return { reason: "wrong_recipient" };
  return { reason: transfers.length > 0 ? "wrong_token" : "not_found" };
}
