import { type Hex, type TransactionReceipt, TransactionReceiptNotFoundError } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { logJson } from "../logging/redact.js";
import type { Worker } from "../workers/run-worker.js";
import { settleRelayCharge } from "./relay-charges.js";
import { markReceipt, markReplaced, recordRelayFailure, submittedAuthorizations } from "./relayed-authorization-record.js";
import { relayerOf, replaceStuckTransaction } from "./relayer.js";

export const RELAY_WORKER_NAME = "relay-confirmer";

/**
 * Follows every submitted authorization to its receipt: records the gas it cost
 * (gas used × effective price, in wei), reports a reverted one on its session, and
 * replaces a transaction that stays unmined past `RELAYER_REPLACE_AFTER_SECONDS`
 * with the same nonce and a higher fee. Settlement itself comes from the index.
 */
export function relayWorker(context: AppContext): Worker {
  return { name: RELAY_WORKER_NAME, intervalMs: 1_000, tick: () => followSubmittedAuthorizations(context) };
}

export async function followSubmittedAuthorizations(context: AppContext): Promise<void> {
  const rows = await submittedAuthorizations(context.store, 100);
  for (const row of rows) {
    const network = networkByChainId(context, row.chain_id);
    if (network === undefined) continue;
    const relayer = relayerOf(context, network, context.store);
    if (relayer === undefined) continue;
    const hashes = JSON.parse(row.transaction_hashes) as Hex[];
    let receipt: TransactionReceipt | undefined;
    let unreadable = false;
    for (const hash of hashes) {
      receipt = await relayer.client.getTransactionReceipt({ hash }).catch((error: unknown) => {
        if (!(error instanceof TransactionReceiptNotFoundError)) unreadable = true;
        return undefined;
      });
      if (receipt !== undefined) break;
    }
    // The node did not answer: decide nothing about this one until it does.
    if (receipt === undefined && unreadable) continue;
    const now = Date.now();
    if (receipt !== undefined) {
      const cost = receipt.gasUsed * receipt.effectiveGasPrice;
      await markReceipt(context.store, row.id, receipt, now);
      await settleRelayCharge(context.store, { transactionHashes: hashes, gasCostWei: cost });
      if (receipt.status !== "success") {
        await recordRelayFailure(context, row.id, "reverted_on_chain", "The relayed transaction reverted; no USDC moved.");
      }
      continue;
    }
    if (now - Number(row.submitted_at) < context.settings.relayerReplaceAfterMs) continue;
    const minedNonces = await relayer.client.getTransactionCount({ address: relayer.address, blockTag: "latest" }).catch(() => 0);
    if (minedNonces > Number(row.relayer_nonce)) {
      // The nonce was used, by none of our transactions for this authorization, long enough ago.
      await recordRelayFailure(context, row.id, "dropped", "The relayed transaction was dropped; no USDC moved. Sign again.");
      continue;
    }
    try {
      const replacement = await replaceStuckTransaction(relayer, row);
      if (replacement === undefined) continue;
      await markReplaced(context.store, row, {
        hashes,
        hash: replacement.hash,
        maxFeePerGas: replacement.maxFeePerGas,
        maxPriorityFeePerGas: replacement.maxPriorityFeePerGas,
        now,
      });
    } catch (error) {
      logJson({ level: "warn", msg: "relayed transaction not replaced", authorization: row.id, error: String(error) });
    }
  }
}
