import type { Kysely } from "kysely";
import { type Hex, TransactionReceiptNotFoundError } from "viem";
import type { AppContext } from "../app-context.js";
import type { NetworkConfig } from "../config/networks.js";
import { indexReadGate } from "../indexed/chain-activity.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedRewardClaim, IndexedTransfer } from "../indexed/indexed-chain.js";
import { indexedTransfersByKey, readByTransactions } from "../indexed/whole-reads.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { paymentAddressOwner } from "../partners/payment-addresses.js";
import { findPayment } from "../payments/payment-record.js";
import type { Database } from "../store/database.js";
import { sameHex } from "../values/checksum-address.js";
import { type LogKey, logKey } from "../values/log-key.js";
import { type Worker, wakeWorker } from "../workers/run-worker.js";
import { type AlsoOnFullRefund, onOrderFullyRefunded } from "./fully-refunded.js";
import {
  findOutgoingTransfer,
  insertOutgoingTransfer,
  moveOutgoingTransfer,
  type OutgoingTransfer,
  outgoingTransfersBetween,
  recordedOutgoingKeys,
  relocateOutgoingTransfer,
  reorgedOutgoingTransfers,
} from "./outgoing-transfer-record.js";
import {
  findRefund,
  moveRefund,
  pendingRefunds,
  type Refund,
  readyRefundsOfPartner,
  refundsOfPayment,
  relocateRefundTransfer,
} from "./refund-record.js";
import { type RewardClaimOfTransaction, refundForTransfer, refundTotals } from "./refund-rules.js";
import { recordRefundEvent } from "./refunds.js";

/** Ponder rewrites its last 30 blocks on a reorg; outgoing transfers are re-read and watched twice that far back. */
const WATCH_BLOCKS = 64n;
const BATCH = 500;
const FULL_PASS_MS = 500;

export const REFUND_WORKER_NAME = "refunds";

/**
 * Proves refunds from the index, as the settlement worker proves payments: records
 * every indexed transfer out of a payment address once (matched to the oldest ready
 * refund it completes, or `unmatched`), moves a matched refund to `pending` and, with
 * the network's confirmations, to `succeeded`; and watches recent outgoing transfers
 * for reorgs (a refund whose transfer left the chain waits again, `refund.reorged`).
 * `alsoOnFullRefund`: what a full refund takes away outside this folder (fully-refunded.ts).
 */
export function refundWorker(context: AppContext, options: { intervalMs?: number; alsoOnFullRefund: AlsoOnFullRefund }): Worker {
  const { alsoOnFullRefund } = options;
  const seenHeads = new Map<number, bigint>();
  /** Per chain, the head the last pass scanned to (in memory: a new process rescans once from the start block). */
  const scannedTo = new Map<number, bigint>();
  let lastFullPass = 0;
  const headGate = indexReadGate();
  return {
    name: REFUND_WORKER_NAME,
    intervalMs: options.intervalMs ?? 50,
    async tick() {
      // As the settlement worker: the head is read often only while the indexer is busy.
      if (!headGate()) return;
      const heads = await context.indexed.heads();
      const moved = context.networks.some(
        (network) => heads.get(network.chainId)?.blockNumber !== seenHeads.get(network.chainId),
      );
      if (!moved && Date.now() - lastFullPass < FULL_PASS_MS) return;
      lastFullPass = Date.now();
      let changes = 0;
      for (const network of context.networks) {
        const head = heads.get(network.chainId)?.blockNumber;
        if (head === undefined) continue;
        changes += await recordOutgoing(context, network, head, scannedTo, alsoOnFullRefund);
        changes += await watchOutgoing(context, network, head, alsoOnFullRefund);
        changes += await rematchRecent(context, network, head, alsoOnFullRefund);
        changes += await confirmPendingRefunds(context, network, head, alsoOnFullRefund);
        seenHeads.set(network.chainId, head);
      }
      if (changes > 0) wakeWorker(DISPATCHER_NAME);
    },
  };
}

/** Records the new outgoing transfers of every payment address of the network; returns how many it recorded. */
async function recordOutgoing(
  context: AppContext,
  network: NetworkConfig,
  head: bigint,
  scannedTo: Map<number, bigint>,
  alsoOnFullRefund: AlsoOnFullRefund,
) {
  const scanned = scannedTo.get(network.chainId);
  let fromBlock = scanned === undefined ? BigInt(network.startBlock) : scanned - WATCH_BLOCKS + 1n;
  if (fromBlock < 0n) fromBlock = 0n;
  let recorded = 0;
  for (const address of network.paymentAddresses) {
    let after: { chainId: number; blockNumber: bigint; logIndex: number } | undefined;
    for (;;) {
      const transfers = await context.indexed.transfers({
        chainIds: [network.chainId],
        from: address,
        fromBlock,
        toBlock: head,
        after,
        limit: BATCH,
      });
      if (transfers.length === 0) break;
      const known = await recordedOutgoingKeys(context.store, {
        chainId: network.chainId,
        transactionHashes: transfers.map((transfer) => transfer.transactionHash),
      });
      const fresh = transfers.filter((transfer) => !known.has(logKey(transfer)));
      const claims = await rewardClaimsOf(context, network.chainId, fresh);
      for (const transfer of fresh) {
        const rewardClaims = claims.get(transfer.transactionHash.toLowerCase()) ?? [];
        if (await recordOutgoingTransfer(context.store, { transfer, network, head, rewardClaims, alsoOnFullRefund })) recorded++;
      }
      const last = transfers.at(-1) as IndexedTransfer;
      after = { chainId: last.chainId, blockNumber: last.blockNumber, logIndex: last.logIndex };
      if (transfers.length < BATCH) break;
    }
  }
  if (scanned === undefined || head > scanned) scannedTo.set(network.chainId, head);
  return recorded;
}

/**
 * The reward claims of these transfers' transactions that their senders funded, by
 * lower-case transaction hash: the index's `RewardClaimed` logs. The distributor's
 * `transferFrom` and its `RewardClaimed` are logs of one transaction, which the
 * indexer commits with its block, so a transfer read from the index is read with its claim.
 */
async function rewardClaimsOf(
  context: AppContext,
  chainId: number,
  transfers: readonly Pick<IndexedTransfer, "transactionHash" | "from">[],
): Promise<Map<string, RewardClaimOfTransaction[]>> {
  const byTransaction = new Map<string, RewardClaimOfTransaction[]>();
  if (transfers.length === 0) return byTransaction;
  const funders = [...new Set(transfers.map((transfer) => transfer.from.toLowerCase() as Hex))];
  const hashes = [...new Set(transfers.map((transfer) => transfer.transactionHash.toLowerCase() as Hex))];
  const claims = await readByTransactions<IndexedRewardClaim>(hashes, ({ transactionHashes, after, limit }) =>
    context.indexed.rewardClaims({ chainIds: [chainId], transactionHashes, funders, after, limit }),
  );
  for (const claim of claims) {
    const key = claim.transactionHash.toLowerCase();
    byTransaction.set(key, [
      ...(byTransaction.get(key) ?? []),
      { funder: claim.funder, recipient: claim.recipient, amount: claim.amount },
    ]);
  }
  return byTransaction;
}

/**
 * Records one indexed outgoing transfer, once, and matches it to the oldest ready
 * refund it completes, in one transaction. Answers whether this call recorded it.
 * `rewardClaims` are the indexed reward claims of its transaction (`rewardClaimsOf`).
 */
export async function recordOutgoingTransfer(
  store: Kysely<Database>,
  params: {
    transfer: IndexedTransfer;
    network: NetworkConfig;
    head: bigint;
    rewardClaims: readonly RewardClaimOfTransaction[];
    alsoOnFullRefund: AlsoOnFullRefund;
    now?: number;
  },
): Promise<boolean> {
  const now = params.now ?? Date.now();
  return store.transaction().execute(async (trx) => {
    const partnerId =
      (await paymentAddressOwner(trx, { chainId: params.transfer.chainId, address: params.transfer.from })) ?? null;
    if (!(await insertOutgoingTransfer(trx, { transfer: params.transfer, partnerId, now }))) return false;
    const outgoing = await findOutgoingTransfer(trx, params.transfer);
    if (outgoing !== undefined) {
      await matchOutgoingTransfer(trx, {
        outgoing,
        network: params.network,
        head: params.head,
        rewardClaims: params.rewardClaims,
        alsoOnFullRefund: params.alsoOnFullRefund,
        now,
      });
    }
    return true;
  });
}

/**
 * Completes the oldest ready refund an unmatched outgoing transfer matches (SPEC 15):
 * the refund moves to `pending` (and on to `succeeded` when the transfer already has
 * the network's confirmations) and the transfer records which refund it paid. A
 * transfer that matches none, or that pays a reward claim of its transaction (the
 * books list it as that claim), stays `unmatched`. Answers whether it matched.
 */
async function matchOutgoingTransfer(
  trx: Kysely<Database>,
  params: {
    outgoing: OutgoingTransfer;
    network: NetworkConfig;
    head: bigint;
    rewardClaims: readonly RewardClaimOfTransaction[];
    alsoOnFullRefund: AlsoOnFullRefund;
    now: number;
  },
): Promise<boolean> {
  const { outgoing, network, now } = params;
  if (outgoing.status !== "unmatched" || outgoing.partnerId === null) return false;
  const ready = await readyRefundsOfPartner(trx, { partnerId: outgoing.partnerId, chainId: outgoing.chainId });
  const candidates = ready.flatMap((refund) =>
    refund.destination === null || refund.readyAt === null
      ? []
      : [
          {
            id: refund.id,
            partnerId: refund.partnerId,
            chainId: refund.chainId,
            token: refund.tokenAddress,
            destination: refund.destination,
            amount: refund.amount,
            readyAt: refund.readyAt,
            readyBlock: refund.readyBlock,
            createdAt: refund.createdAt,
          },
        ],
  );
  const facts = {
    chainId: outgoing.chainId,
    // Only the network's canonical USDC is indexed; a refund names it too.
    token: outgoing.tokenAddress,
    from: outgoing.from,
    to: outgoing.to,
    amount: outgoing.amount,
    blockNumber: outgoing.blockNumber,
    minedAt: outgoing.minedAt,
    partnerId: outgoing.partnerId,
    rewardClaims: params.rewardClaims,
  };
  const chosen = refundForTransfer(facts, candidates);
  if (chosen === undefined) return false;
  const refund = ready.find((candidate) => candidate.id === chosen.id) as Refund;
  const transfer = {
    transactionHash: outgoing.transactionHash,
    logIndex: outgoing.logIndex,
    blockNumber: outgoing.blockNumber,
    blockHash: outgoing.blockHash,
  };
  if (!(await moveRefund(trx, { refund, transition: "see_transfer", now, input: transfer }))) return false;
  if (!(await moveOutgoingTransfer(trx, { transfer: outgoing, transition: "match", now, input: { refundId: refund.id } }))) {
    throw new Error(`outgoing transfer ${outgoing.transactionHash}:${outgoing.logIndex} changed while matched`);
  }
  const pending: Refund = { ...refund, status: "pending", transfer, updatedAt: now };
  if (confirmationsOf(outgoing, params.head) >= network.confirmations) {
    await succeedRefund(trx, { refund: pending, now, alsoOnFullRefund: params.alsoOnFullRefund });
  }
  return true;
}

/** A pending refund whose transfer is final: `succeeded`, `refund.succeeded`, and a full refund's consequences. */
async function succeedRefund(
  trx: Kysely<Database>,
  params: { refund: Refund; now: number; alsoOnFullRefund: AlsoOnFullRefund },
): Promise<boolean> {
  const { refund, now } = params;
  if (!(await moveRefund(trx, { refund, transition: "succeed", now }))) return false;
  const succeeded: Refund = { ...refund, status: "succeeded", succeededAt: now, updatedAt: now };
  await recordRefundEvent(trx, { refund: succeeded, type: "refund.succeeded", now });
  if (refund.subject === "order" && refund.orderId !== null) {
    const payment = await findPayment(trx, refund.payment);
    const refunds = await refundsOfPayment(trx, refund.payment);
    if (payment !== undefined && refundTotals(payment.amount, refunds).refundStatus === "full") {
      await onOrderFullyRefunded(trx, {
        orderId: refund.orderId,
        payment: refund.payment,
        now,
        alsoOnFullRefund: params.alsoOnFullRefund,
      });
    }
  }
  return true;
}

/** Pending refunds whose transfer reached the network's confirmations succeed; returns how many did. */
async function confirmPendingRefunds(
  context: AppContext,
  network: NetworkConfig,
  head: bigint,
  alsoOnFullRefund: AlsoOnFullRefund,
): Promise<number> {
  let changed = 0;
  for (const refund of await pendingRefunds(context.store, { chainId: network.chainId, limit: BATCH })) {
    const transfer = refund.transfer;
    if (transfer === null || confirmationsOf(transfer, head) < network.confirmations) continue;
    // Only a transfer the index still holds in the same block: a reorged one is the watch's.
    const indexed = await context.indexed.transfersByHash(transfer.transactionHash);
    if (!indexed.some((row) => row.logIndex === transfer.logIndex && sameHex(row.blockHash, transfer.blockHash))) {
      continue;
    }
    const now = Date.now();
    const done = await context.store.transaction().execute(async (trx) => {
      const current = await findRefund(trx, refund.id);
      return current?.status === "pending" ? succeedRefund(trx, { refund: current, now, alsoOnFullRefund }) : false;
    });
    if (done) changed++;
  }
  return changed;
}

/**
 * Unmatched outgoing transfers of the recent window get another chance: a refund whose
 * ready block was read from a head a moment old, or that became ready after the
 * transfer was recorded.
 */
async function rematchRecent(
  context: AppContext,
  network: NetworkConfig,
  head: bigint,
  alsoOnFullRefund: AlsoOnFullRefund,
): Promise<number> {
  const from = head > WATCH_BLOCKS ? head - WATCH_BLOCKS : 0n;
  const unmatched = (
    await outgoingTransfersBetween(context.store, {
      chainId: network.chainId,
      fromBlock: from,
      toBlock: head,
      statuses: ["unmatched"],
      limit: BATCH,
    })
  ).filter((outgoing) => outgoing.partnerId !== null);
  const claims = await rewardClaimsOf(context, network.chainId, unmatched);
  let matched = 0;
  for (const outgoing of unmatched) {
    const rewardClaims = claims.get(outgoing.transactionHash.toLowerCase()) ?? [];
    const now = Date.now();
    const done = await context.store.transaction().execute(async (trx) => {
      const current = await findOutgoingTransfer(trx, outgoing);
      return current === undefined
        ? false
        : matchOutgoingTransfer(trx, { outgoing: current, network, head, rewardClaims, alsoOnFullRefund, now });
    });
    if (done) matched++;
  }
  return matched;
}

type Whereabouts = { kind: "unchanged" } | { kind: "moved"; blockNumber: bigint; blockHash: Hex } | { kind: "gone" };

/**
 * The reorg watch of money out (as api/settlement/reorg-watch.ts for money in):
 * a recorded outgoing transfer of the window that left the index and the chain is
 * `reorged` and its refund waits for a transfer again (`refund.reorged` when it had
 * succeeded); one re-mined in another block keeps its refund with the new block; a
 * reorged one back in the index is matched again from scratch.
 */
async function watchOutgoing(
  context: AppContext,
  network: NetworkConfig,
  head: bigint,
  alsoOnFullRefund: AlsoOnFullRefund,
): Promise<number> {
  const from = head > WATCH_BLOCKS ? head - WATCH_BLOCKS : 0n;
  const recorded = await outgoingTransfersBetween(context.store, {
    chainId: network.chainId,
    fromBlock: from,
    toBlock: head,
    statuses: ["matched", "unmatched"],
    limit: BATCH,
  });
  const reorged = await reorgedOutgoingTransfers(context.store, { chainId: network.chainId, limit: BATCH });
  if (recorded.length === 0 && reorged.length === 0) return 0;
  const indexed = await indexedTransfersByKey(context.indexed, { chainId: network.chainId, fromBlock: from, toBlock: head });
  let changed = 0;
  for (const outgoing of recorded) {
    const where = await whereabouts(context, outgoing, indexed);
    const now = Date.now();
    if (where.kind === "gone") {
      if (await context.store.transaction().execute((trx) => reorgOutgoing(trx, { outgoing, now }))) changed++;
    } else if (where.kind === "moved") {
      await context.store.transaction().execute(async (trx) => {
        const block = { number: where.blockNumber, hash: where.blockHash };
        await relocateOutgoingTransfer(trx, { transfer: outgoing, block, now });
        if (outgoing.refundId !== null) await relocateRefundTransfer(trx, { refundId: outgoing.refundId, block, now });
      });
    }
  }
  for (const outgoing of reorged) {
    const back =
      indexed.get(logKey(outgoing)) ??
      (await context.indexed.transfersByHash(outgoing.transactionHash)).find((row) => row.logIndex === outgoing.logIndex);
    if (back === undefined) continue;
    const rewardClaims = (await rewardClaimsOf(context, network.chainId, [back])).get(back.transactionHash.toLowerCase()) ?? [];
    const now = Date.now();
    const restored = await context.store.transaction().execute(async (trx) => {
      const block = { number: back.blockNumber, hash: back.blockHash };
      if (!(await moveOutgoingTransfer(trx, { transfer: outgoing, transition: "restore", now, input: { block } }))) return false;
      const current = await findOutgoingTransfer(trx, outgoing);
      if (current !== undefined) {
        await matchOutgoingTransfer(trx, { outgoing: current, network, head, rewardClaims, alsoOnFullRefund, now });
      }
      return true;
    });
    if (restored) changed++;
  }
  return changed;
}

async function reorgOutgoing(trx: Kysely<Database>, params: { outgoing: OutgoingTransfer; now: number }): Promise<boolean> {
  const { outgoing, now } = params;
  if (!(await moveOutgoingTransfer(trx, { transfer: outgoing, transition: "reorg", now }))) return false;
  if (outgoing.refundId === null) return true;
  const refund = await findRefund(trx, outgoing.refundId);
  if (refund === undefined || (refund.status !== "pending" && refund.status !== "succeeded")) return true;
  if (!(await moveRefund(trx, { refund, transition: "reorg", now })))
    throw new Error(`refund ${refund.id} changed while reorged`);
  const waiting: Refund = { ...refund, status: "ready", transfer: null, succeededAt: null, updatedAt: now };
  if (refund.status === "succeeded") await recordRefundEvent(trx, { refund: waiting, type: "refund.reorged", now });
  console.warn(
    JSON.stringify({
      level: "warn",
      msg: "a refund's transfer was reorged off the chain; the refund waits for a transfer again",
      refundId: refund.id,
      transactionHash: outgoing.transactionHash,
    }),
  );
  return true;
}

async function whereabouts(
  context: AppContext,
  outgoing: OutgoingTransfer,
  indexed: Map<LogKey, IndexedTransfer>,
): Promise<Whereabouts> {
  const found = indexed.get(logKey(outgoing));
  if (found !== undefined) {
    return sameHex(found.blockHash, outgoing.blockHash)
      ? { kind: "unchanged" }
      : { kind: "moved", blockNumber: found.blockNumber, blockHash: found.blockHash };
  }
  // The index may be between removing a reorged block and adding its replacement: the chain decides.
  const client = context.rpc.get(outgoing.chainId);
  if (client === undefined) return { kind: "unchanged" };
  const receipt = await client
    .getTransactionReceipt({ hash: outgoing.transactionHash })
    .catch((error: unknown) => (error instanceof TransactionReceiptNotFoundError ? null : Promise.reject(error)));
  if (receipt === null || receipt.status !== "success") return { kind: "gone" };
  return sameHex(receipt.blockHash, outgoing.blockHash)
    ? { kind: "unchanged" }
    : { kind: "moved", blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
}
