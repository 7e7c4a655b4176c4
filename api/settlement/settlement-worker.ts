import type { AppContext } from "../app-context.js";
import { expireSession } from "../checkout/create-session.js";
import type { Worker } from "../workers/run-worker.js";
import { confirmPendingPayment, recordTransfer } from "./record-transfer.js";

/** Ponder keeps the last 30 blocks unfinalised (Base and Anvil); rescan that far back for late-arriving rows. */
const REORG_WINDOW_BLOCKS = 30n;
const BATCH = 500;

/**
 * Settles what the index shows without waiting for anyone to submit a hash:
 * records every new transfer to a payment address, settles pending payments
 * once they have enough confirmations, and expires sessions at `expiresAt`.
 */
export function settlementWorker(context: AppContext, options: { intervalMs?: number } = {}): Worker {
  return {
    name: "settlement",
    intervalMs: options.intervalMs ?? 100,
    async tick() {
      const heads = await context.indexed.heads();
      for (const network of context.networks) {
        const head = heads.get(network.chainId)?.blockNumber;
        if (head === undefined) continue;
        await recordNewTransfers(context, network, head);
        await confirmPending(context, network, head);
      }
      await expireSessions(context);
    },
  };
}

async function recordNewTransfers(context: AppContext, network: AppContext["networks"][number], head: bigint) {
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
      fromBlock,
      toBlock: head,
      after,
      limit: BATCH,
    });
    if (transfers.length === 0) break;
    const known = await context.store
      .selectFrom("payment")
      .select(["transaction_hash", "log_index"])
      .where("chain_id", "=", network.chainId)
      .where(
        "transaction_hash",
        "in",
        transfers.map((transfer) => transfer.transactionHash),
      )
      .execute();
    const seen = new Set(known.map((row) => `${row.transaction_hash}:${row.log_index}`));
    for (const transfer of transfers) {
      if (seen.has(`${transfer.transactionHash}:${transfer.logIndex}`)) continue;
      await recordTransfer(context.store, { transfer, network, head });
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
}

async function confirmPending(context: AppContext, network: AppContext["networks"][number], head: bigint) {
  const pending = await context.store
    .selectFrom("payment")
    .selectAll()
    .where("status", "=", "pending")
    .where("chain_id", "=", network.chainId)
    .limit(BATCH)
    .execute();
  for (const payment of pending) {
    const indexed = await context.indexed.transfersByHash(payment.transaction_hash as `0x${string}`);
    const stillIndexed = indexed.some(
      (transfer) =>
        transfer.chainId === payment.chain_id &&
        transfer.logIndex === payment.log_index &&
        transfer.blockHash === payment.block_hash,
    );
    await confirmPendingPayment(context.store, { payment, stillIndexed, network, head });
  }
}

async function expireSessions(context: AppContext) {
  const now = Date.now();
  const due = await context.store
    .selectFrom("checkout_session")
    .selectAll()
    .where("status", "=", "awaiting_payment")
    .where("expires_at", "<=", now)
    .limit(BATCH)
    .execute();
  for (const session of due) {
    await context.store.transaction().execute((trx) => expireSession(trx, { session, now, reason: "expired" }));
  }
}
