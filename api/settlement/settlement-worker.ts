import { TransactionReceiptNotFoundError } from "viem";
import type { AppContext } from "../app-context.js";
import { expireSession } from "../checkout/expire-session.js";
import { sessionsDueForExpiry } from "../checkout/session-record.js";
import { indexReadGate } from "../indexed/chain-activity.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { type Payment, pendingPayments, recordedKeys } from "../payments/payment-record.js";
import { logKey } from "../values/log-key.js";
import { type Worker, wakeWorker } from "../workers/run-worker.js";
import { confirmPendingPayment, isPaymentTransfer, type PendingWhereabouts, recordTransfer } from "./record-transfer.js";
import { watchCreditedPayments } from "./reorg-watch.js";

/** Ponder keeps the last 30 blocks unfinalised (Base and Anvil); rescan that far back for late-arriving rows. */
const REORG_WINDOW_BLOCKS = 30n;
const BATCH = 500;

/**
 * Settles what the index shows without waiting for anyone to submit a hash:
 * records every new transfer to a payment address, settles pending payments
 * once they have enough confirmations, notices credited payments a reorg took
 * off the chain, and expires sessions at `expiresAt`.
 */
export function settlementWorker(context: AppContext, options: { intervalMs?: number } = {}): Worker {
  // Watching the indexed head is one cheap query, so it is checked often; the full
  // pass runs when a chain moved, and at least every FULL_PASS_MS for expiries.
  const seenHeads = new Map<number, bigint>();
  let lastFullPass = 0;
  const headGate = indexReadGate();
  return {
    name: "settlement",
    intervalMs: options.intervalMs ?? 20,
    async tick() {
      // While the indexer is idle the head is looked at a few times a second, not fifty.
      if (!headGate()) return;
      const heads = await context.indexed.heads();
      const moved = context.networks.some(
        (network) => heads.get(network.chainId)?.blockNumber !== seenHeads.get(network.chainId),
      );
      if (!moved && Date.now() - lastFullPass < FULL_PASS_MS) return;
      lastFullPass = Date.now();
      // The dispatcher is woken as soon as a step wrote events, not after the whole pass:
      // the partner hears of a settlement while the rest of the pass runs.
      const step = (changes: number) => {
        if (changes > 0) wakeWorker(DISPATCHER_NAME);
      };
      for (const network of context.networks) {
        const head = heads.get(network.chainId)?.blockNumber;
        if (head === undefined) continue;
        // Pending payments first: a new head is, above all, the confirming block of the
        // payments recorded a few blocks ago. A new transfer that already has enough
        // confirmations is settled by recordNewTransfers itself.
        step(await confirmPending(context, network, head));
        step(await recordNewTransfers(context, network, head));
        step(await watchCreditedPayments(context, network, head));
        seenHeads.set(network.chainId, head);
      }
      step(await expireSessions(context));
    },
  };
}

const FULL_PASS_MS = 500;

/** Returns how many transfers it recorded. */
async function recordNewTransfers(context: AppContext, network: AppContext["networks"][number], head: bigint): Promise<number> {
  let recorded = 0;
  const cursorName = `settlement:transfers:${network.chainId}`;
  const cursor = await context.store
    .selectFrom("worker_cursor")
    .select("value")
    .where("name", "=", cursorName)
    .executeTakeFirst();
  const scannedTo = cursor === undefined ? BigInt(network.startBlock) - 1n : BigInt(cursor.value);
  let fromBlock = scannedTo - REORG_WINDOW_BLOCKS + 1n;
  if (fromBlock < 0n) fromBlock = 0n;

  let after: { chainId: number; blockNumber: bigint; logIndex: number } | undefined;
  for (;;) {
    const transfers = await context.indexed.transfers({
      chainIds: [network.chainId],
      // Only money in is a payment; the index also holds what payment addresses send.
      to: network.paymentAddresses,
      fromBlock,
      toBlock: head,
      after,
      limit: BATCH,
    });
    if (transfers.length === 0) break;
    const transactionHashes = transfers.map((transfer) => transfer.transactionHash);
    const seen = await recordedKeys(context.store, { chainId: network.chainId, transactionHashes });
    // A subscription's charge is the subscription worker's to settle (docs/subscriptions.md): no
    // unresolved payment, no `payment.unresolved`, for money that came as the customer agreed.
    const charges =
      network.subscriptionManager === undefined
        ? new Set<string>()
        : await context.indexed.subscriptionChargeTransactions({
            chainId: network.chainId,
            manager: network.subscriptionManager,
            transactionHashes,
          });
    for (const transfer of transfers) {
      if (!isPaymentTransfer(transfer) || seen.has(logKey(transfer))) continue;
      if (charges.has(transfer.transactionHash.toLowerCase())) continue;
      await recordTransfer(context.store, { transfer, network, head });
      recorded++;
    }
    const last = transfers.at(-1)!;
    after = { chainId: last.chainId, blockNumber: last.blockNumber, logIndex: last.logIndex };
    if (transfers.length < BATCH) break;
  }
  if (head > scannedTo) {
    const now = Date.now();
    await context.store
      .insertInto("worker_cursor")
      .values({ name: cursorName, value: head.toString(), updated_at: now })
      .onConflict((oc) => oc.column("name").doUpdateSet({ value: head.toString(), updated_at: now }))
      .execute();
  }
  return recorded;
}

/** Returns how many pending payments settled or were forgotten after a reorg. */
async function confirmPending(context: AppContext, network: AppContext["networks"][number], head: bigint): Promise<number> {
  let changed = 0;
  const pending = await pendingPayments(context.store, { chainId: network.chainId, limit: BATCH });
  for (const payment of pending) {
    const where = await pendingWhereabouts(context, payment, head);
    if ((await confirmPendingPayment(context.store, { payment, where, network, head })) !== "pending") changed++;
  }
  return changed;
}

/**
 * Where a pending payment's transfer is. The index answers when it holds the transfer; when
 * it does not, the chain does (one receipt look-up), as the reorg watch asks it: an index
 * behind or rewound below the payment's block (a restart's crash recovery, a new schema
 * catching up) holds no transfer there yet, and that is no reorg.
 */
async function pendingWhereabouts(context: AppContext, payment: Payment, head: bigint): Promise<PendingWhereabouts> {
  const indexed = (await context.indexed.transfersByHash(payment.transactionHash)).find(
    (transfer) => transfer.chainId === payment.chainId && transfer.logIndex === payment.logIndex,
  );
  if (indexed !== undefined) {
    return indexed.blockHash === payment.blockHash
      ? { kind: "indexed" }
      : { kind: "moved", blockNumber: indexed.blockNumber, blockHash: indexed.blockHash };
  }
  // Below its block the index cannot hold it: no question for the node on every pass of a long catch-up.
  if (head < payment.blockNumber) return { kind: "not_indexed" };
  const client = context.rpc.get(payment.chainId);
  if (client === undefined) return { kind: "not_indexed" };
  // The node away (the watchdog reports it): nothing is known, so nothing changes until it answers.
  const receipt = await client
    .getTransactionReceipt({ hash: payment.transactionHash })
    .catch((error: unknown) => (error instanceof TransactionReceiptNotFoundError ? null : undefined));
  if (receipt === undefined) return { kind: "not_indexed" };
  if (receipt === null || receipt.status !== "success") return { kind: "gone" };
  return receipt.blockHash === payment.blockHash
    ? { kind: "not_indexed" }
    : { kind: "moved", blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
}

/** Returns how many sessions it expired. */
async function expireSessions(context: AppContext): Promise<number> {
  let expired = 0;
  const now = Date.now();
  const due = await sessionsDueForExpiry(context.store, { now, limit: BATCH });
  for (const session of due) {
    if (await context.store.transaction().execute((trx) => expireSession(trx, { session, now, reason: "expired" }))) expired++;
  }
  return expired;
}
