import type { Kysely } from "kysely";
import { type Hex, TransactionReceiptNotFoundError } from "viem";
import type { AppContext } from "../app-context.js";
import { findSession } from "../checkout/session-record.js";
import type { NetworkConfig } from "../config/networks.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { indexedTransfersByKey } from "../indexed/whole-reads.js";
import { logJson } from "../logging/redact.js";
import { purchaseIdsOfOrders } from "../orders/order-record.js";
import { recordEvent } from "../outbox/record-event.js";
import {
  creditedPaymentsBetween,
  movePayment,
  type Payment,
  relocatePayment,
  reorgedPayments,
} from "../payments/payment-record.js";
import type { Database } from "../store/database.js";
import { type LogKey, logKey } from "../values/log-key.js";

/**
 * How far below the indexed head credited payments are re-checked. Ponder rewrites
 * its last 30 blocks on a reorg (Base and Anvil); twice that leaves room for a
 * worker that was away for a while.
 */
export const REORG_WATCH_BLOCKS = 64n;
const BATCH = 500;

/** Where a credited transfer is now, as the index and (on a miss) the chain say. */
type Whereabouts = { kind: "unchanged" } | { kind: "moved"; blockNumber: bigint; blockHash: Hex } | { kind: "gone" };

/**
 * Compares the payments credited within the recent window with the index and, when
 * the index no longer holds one, with the canonical chain: a transfer that is gone
 * is marked `reorged` and reported (`payment.reorged`, a log line, health); one that
 * came back (re-mined, possibly in another block) is credited again and reported
 * (`payment.restored`). Returns how many payments changed.
 */
export async function watchCreditedPayments(context: AppContext, network: NetworkConfig, head: bigint): Promise<number> {
  const from = head > REORG_WATCH_BLOCKS ? head - REORG_WATCH_BLOCKS : 0n;
  const payments = await creditedPaymentsBetween(context.store, {
    chainId: network.chainId,
    fromBlock: from,
    toBlock: head,
    limit: BATCH,
  });
  if (payments.length === 0) return 0;
  const indexed = await indexedTransfersByKey(context.indexed, { chainId: network.chainId, fromBlock: from, toBlock: head });
  let changed = 0;
  for (const payment of payments) {
    const now = Date.now();
    const where = await whereabouts(context, payment, indexed);
    if (payment.status === "reorged") {
      if (where.kind === "moved" && (await restorePayment(context.store, { payment, where, network, now }))) changed++;
    } else if (where.kind === "gone") {
      if (await markReorged(context.store, { payment, network, now })) changed++;
    } else if (where.kind === "moved") {
      await moveBlock(context.store, payment, where);
    }
  }
  return changed;
}

async function whereabouts(context: AppContext, payment: Payment, indexed: Map<LogKey, IndexedTransfer>): Promise<Whereabouts> {
  const found = indexed.get(logKey(payment));
  if (found !== undefined) {
    return found.blockHash === payment.blockHash && payment.status !== "reorged"
      ? { kind: "unchanged" }
      : { kind: "moved", blockNumber: found.blockNumber, blockHash: found.blockHash };
  }
  // A reorged payment comes back only through the index.
  if (payment.status === "reorged") return { kind: "gone" };
  // The index may be between removing a reorged block and adding its replacement;
  // the chain itself settles whether the transaction is still there.
  const client = context.rpc.get(payment.chainId);
  if (client === undefined) return { kind: "unchanged" };
  const receipt = await client
    .getTransactionReceipt({ hash: payment.transactionHash })
    .catch((error: unknown) => (error instanceof TransactionReceiptNotFoundError ? null : Promise.reject(error)));
  if (receipt === null || receipt.status !== "success") return { kind: "gone" };
  return receipt.blockHash === payment.blockHash
    ? { kind: "unchanged" }
    : { kind: "moved", blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
}

async function markReorged(
  store: Kysely<Database>,
  params: { payment: Payment; network: NetworkConfig; now: number },
): Promise<boolean> {
  const { payment, now } = params;
  return store.transaction().execute(async (trx) => {
    if (!(await movePayment(trx, { payment, transition: "reorg", now }))) return false;
    const data = await recordReorgEvent(trx, { ...params, type: "payment.reorged" });
    logJson({ level: "warn", msg: "a credited payment was reorged off the chain", ...data });
    return true;
  });
}

async function restorePayment(
  store: Kysely<Database>,
  params: { payment: Payment; where: Extract<Whereabouts, { kind: "moved" }>; network: NetworkConfig; now: number },
): Promise<boolean> {
  const { payment, where, now } = params;
  // An attached payment's resolution note says so; anything else was settled by the matcher.
  const transition = payment.resolution?.startsWith("attached") ? "restore_attached" : "restore_settled";
  return store.transaction().execute(async (trx) => {
    const block = { number: where.blockNumber, hash: where.blockHash };
    if (!(await movePayment(trx, { payment, transition, now, block }))) return false;
    const restored = { ...payment, blockNumber: where.blockNumber, blockHash: where.blockHash };
    const data = await recordReorgEvent(trx, { payment: restored, network: params.network, now, type: "payment.restored" });
    logJson({ level: "warn", msg: "a reorged payment is back on the chain", ...data });
    return true;
  });
}

async function moveBlock(store: Kysely<Database>, payment: Payment, where: Extract<Whereabouts, { kind: "moved" }>) {
  await relocatePayment(store, { payment, block: { number: where.blockNumber, hash: where.blockHash }, now: Date.now() });
}

async function recordReorgEvent(
  trx: Kysely<Database>,
  params: { payment: Payment; network: NetworkConfig; now: number; type: "payment.reorged" | "payment.restored" },
) {
  const { payment } = params;
  const paid = await sessionAndOrder(trx, payment.sessionId);
  const data = {
    externalOrderId: paid?.session.externalOrderId,
    orderId: paid?.order.id,
    purchaseId: paid?.order.purchaseId,
    sessionId: paid?.session.id,
    transactionHash: payment.transactionHash,
    logIndex: payment.logIndex,
    network: params.network.name,
    chainId: payment.chainId,
    blockNumber: payment.blockNumber.toString(),
    blockHash: payment.blockHash,
    payer: payment.from,
    recipient: payment.to,
    amount: payment.amount.toString(),
    detectedAt: new Date(params.now).toISOString(),
  };
  if (payment.partnerId !== null) {
    await recordEvent(trx, {
      partnerId: payment.partnerId,
      type: params.type,
      orderingKey: paid?.order.id ?? logKey(payment),
      now: params.now,
      data,
    });
  }
  return data;
}

/** The session a payment paid and its order, when it names one. */
async function sessionAndOrder(trx: Kysely<Database>, sessionId: string | null) {
  const session = sessionId === null ? undefined : await findSession(trx, sessionId);
  const [order] = session === undefined ? [] : await purchaseIdsOfOrders(trx, [session.orderId]);
  return session === undefined || order === undefined ? undefined : { session, order };
}

/** For health: how many credited payments are currently off the chain, and the latest one. */
export async function reorgSummary(store: Kysely<Database>) {
  const { count, last } = await reorgedPayments(store);
  return {
    settledPaymentsReorged: count,
    last:
      last === undefined
        ? null
        : {
            chainId: last.chainId,
            transactionHash: last.transactionHash,
            logIndex: last.logIndex,
            blockNumber: last.blockNumber.toString(),
            orderId: last.orderId,
            detectedAt: new Date(last.updatedAt).toISOString(),
          },
  };
}
