import type { Kysely } from "kysely";
import { type Hex, TransactionReceiptNotFoundError } from "viem";
import type { AppContext } from "../app-context.js";
import { checksum } from "../checksum-address.js";
import type { NetworkConfig } from "../config/networks.js";
import { recordEvent } from "../outbox/record-event.js";
import type { Database, PaymentTable } from "../store/database.js";
import { creditedPaymentsBetween, movePayment, relocatePayment } from "./payment-record.js";

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
  const indexed = await indexedBlockHashes(context, network, from, head);
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

/** Every indexed transfer of the window, by (tx hash, log index): one paged read of the index. */
async function indexedBlockHashes(context: AppContext, network: NetworkConfig, fromBlock: bigint, toBlock: bigint) {
  const found = new Map<string, { blockNumber: bigint; blockHash: Hex }>();
  let after: { chainId: number; blockNumber: bigint; logIndex: number } | undefined;
  for (;;) {
    const transfers = await context.indexed.transfers({ chainIds: [network.chainId], fromBlock, toBlock, after, limit: BATCH });
    for (const transfer of transfers) {
      found.set(`${transfer.transactionHash}:${transfer.logIndex}`, {
        blockNumber: transfer.blockNumber,
        blockHash: transfer.blockHash,
      });
    }
    if (transfers.length < BATCH) return found;
    const last = transfers.at(-1)!;
    after = { chainId: last.chainId, blockNumber: last.blockNumber, logIndex: last.logIndex };
  }
}

async function whereabouts(
  context: AppContext,
  payment: PaymentTable,
  indexed: Map<string, { blockNumber: bigint; blockHash: Hex }>,
): Promise<Whereabouts> {
  const found = indexed.get(`${payment.transaction_hash}:${payment.log_index}`);
  if (found !== undefined) {
    return found.blockHash === payment.block_hash && payment.status !== "reorged"
      ? { kind: "unchanged" }
      : { kind: "moved", blockNumber: found.blockNumber, blockHash: found.blockHash };
  }
  // A reorged payment comes back only through the index.
  if (payment.status === "reorged") return { kind: "gone" };
  // The index may be between removing a reorged block and adding its replacement;
  // the chain itself settles whether the transaction is still there.
  const client = context.rpc.get(payment.chain_id);
  if (client === undefined) return { kind: "unchanged" };
  const receipt = await client
    .getTransactionReceipt({ hash: payment.transaction_hash as Hex })
    .catch((error: unknown) => (error instanceof TransactionReceiptNotFoundError ? null : Promise.reject(error)));
  if (receipt === null || receipt.status !== "success") return { kind: "gone" };
  return receipt.blockHash === payment.block_hash
    ? { kind: "unchanged" }
    : { kind: "moved", blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
}

async function markReorged(
  store: Kysely<Database>,
  params: { payment: PaymentTable; network: NetworkConfig; now: number },
): Promise<boolean> {
  const { payment, now } = params;
  return store.transaction().execute(async (trx) => {
    if (!(await movePayment(trx, { payment, transition: "reorg", now }))) return false;
    const data = await recordReorgEvent(trx, { ...params, type: "payment.reorged" });
    console.warn(JSON.stringify({ level: "warn", msg: "a credited payment was reorged off the chain", ...data }));
    return true;
  });
}

async function restorePayment(
  store: Kysely<Database>,
  params: { payment: PaymentTable; where: Extract<Whereabouts, { kind: "moved" }>; network: NetworkConfig; now: number },
): Promise<boolean> {
  const { payment, where, now } = params;
  // An attached payment's resolution note says so; anything else was settled by the matcher.
  const transition = payment.resolution?.startsWith("attached") ? "restore_attached" : "restore_settled";
  return store.transaction().execute(async (trx) => {
    const restoredRow = await movePayment(trx, {
      payment,
      transition,
      now,
      set: { block_number: Number(where.blockNumber), block_hash: where.blockHash },
    });
    if (!restoredRow) return false;
    const restored = { ...payment, block_number: Number(where.blockNumber), block_hash: where.blockHash };
    const data = await recordReorgEvent(trx, { payment: restored, network: params.network, now, type: "payment.restored" });
    console.warn(JSON.stringify({ level: "warn", msg: "a reorged payment is back on the chain", ...data }));
    return true;
  });
}

async function moveBlock(store: Kysely<Database>, payment: PaymentTable, where: Extract<Whereabouts, { kind: "moved" }>) {
  await relocatePayment(store, { payment, blockNumber: where.blockNumber, blockHash: where.blockHash, now: Date.now() });
}

async function recordReorgEvent(
  trx: Kysely<Database>,
  params: { payment: PaymentTable; network: NetworkConfig; now: number; type: "payment.reorged" | "payment.restored" },
) {
  const { payment } = params;
  const session =
    payment.session_id === null
      ? undefined
      : await trx
          .selectFrom("checkout_session")
          .innerJoin("orders", "orders.id", "checkout_session.order_id")
          .select(["checkout_session.id", "checkout_session.external_order_id", "orders.id as order_id", "orders.purchase_id"])
          .where("checkout_session.id", "=", payment.session_id)
          .executeTakeFirst();
  const data = {
    externalOrderId: session?.external_order_id,
    orderId: session?.order_id,
    purchaseId: session?.purchase_id,
    sessionId: session?.id,
    transactionHash: payment.transaction_hash,
    logIndex: payment.log_index,
    network: params.network.name,
    chainId: payment.chain_id,
    blockNumber: String(payment.block_number),
    blockHash: payment.block_hash,
    payer: checksum(payment.from_address),
    recipient: checksum(payment.to_address),
    amount: payment.amount,
    detectedAt: new Date(params.now).toISOString(),
  };
  if (payment.partner_id !== null) {
    await recordEvent(trx, {
      partnerId: payment.partner_id,
      type: params.type,
      orderingKey: session?.order_id ?? `${payment.chain_id}:${payment.transaction_hash}:${payment.log_index}`,
      now: params.now,
      data,
    });
  }
  return data;
}

/** For health: how many credited payments are currently off the chain, and the latest one. */
export async function reorgSummary(store: Kysely<Database>) {
  const [count, last] = await Promise.all([
    store
      .selectFrom("payment")
      .select((eb) => eb.fn.countAll<string | number>().as("n"))
      .where("status", "=", "reorged")
      .executeTakeFirst(),
    store
      .selectFrom("payment")
      .leftJoin("checkout_session", "checkout_session.id", "payment.session_id")
      .select([
        "payment.chain_id",
        "payment.transaction_hash",
        "payment.log_index",
        "payment.block_number",
        "payment.updated_at",
        "checkout_session.order_id",
      ])
      .where("payment.status", "=", "reorged")
      .orderBy("payment.updated_at", "desc")
      .limit(1)
      .executeTakeFirst(),
  ]);
  return {
    settledPaymentsReorged: Number(count?.n ?? 0),
    last:
      last === undefined
        ? null
        : {
            chainId: last.chain_id,
            transactionHash: last.transaction_hash,
            logIndex: last.log_index,
            blockNumber: String(last.block_number),
            orderId: last.order_id,
            detectedAt: new Date(Number(last.updated_at)).toISOString(),
          },
  };
}
