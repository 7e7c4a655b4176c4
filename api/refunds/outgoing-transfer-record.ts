import type { Kysely } from "kysely";
import type { Address, Hex } from "viem";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { OutgoingTransferStatus, OutgoingTransferTable } from "../store/refund-tables.js";
import { type StoredTransfer, storedTransferColumns, toStoredTransfer } from "../store/stored-transfer.js";
import { type InputField, planMove, type TransitionTable } from "../store/transition-table.js";
import { checksum } from "../values/checksum-address.js";
import { type LogKey, logKey } from "../values/log-key.js";

/**
 * The outgoing-transfer record: every canonical-USDC transfer out of a watched payment
 * address that the index held, recorded once (key: chain, transaction hash, log index),
 * matched to a refund or kept `unmatched`, never dropped (docs/refunds.md). Every query of
 * `outgoing_transfer` lives here.
 */
export type OutgoingTransferRow = OutgoingTransferTable;

export type OutgoingTransfer = StoredTransfer & {
  partnerId: string | null;
  tokenAddress: Address;
  status: OutgoingTransferStatus;
  refundId: string | null;
  createdAt: number;
  updatedAt: number;
};

export function toOutgoingTransfer(row: OutgoingTransferRow): OutgoingTransfer {
  return {
    ...toStoredTransfer(row),
    partnerId: row.partner_id,
    tokenAddress: checksum(row.token_address),
    status: row.status,
    refundId: row.refund_id,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** An outgoing transfer's legal status changes (it is born `matched` or `unmatched`). */
export const outgoingTransferTransitions = {
  /** A ready refund it completes (SPEC 15's rule), found when it was recorded or later. */
  match: {
    from: ["unmatched"],
    to: "matched",
    guard: "refund_id IS NULL",
    set: (input: { refundId: string }) => ({ refund_id: input.refundId }),
  },
  /** It left the index and the chain; its refund, if any, waits again. */
  reorg: { from: ["matched", "unmatched"], to: "reorged", set: () => ({ refund_id: null }) },
  /** Back in the index (possibly in another block): matched again from scratch. */
  restore: {
    from: ["reorged"],
    to: "unmatched",
    guard: "back in the index, in the block it is mined in now",
    set: (input: { block: { number: bigint; hash: Hex } }) => ({
      block_number: Number(input.block.number),
      block_hash: input.block.hash.toLowerCase(),
    }),
  },
} as const satisfies TransitionTable<OutgoingTransferStatus, string, OutgoingTransferTable>;

export type OutgoingTransferTransition = keyof typeof outgoingTransferTransitions;

type TransferKey = { chainId: number; transactionHash: string; logIndex: number };

const keyOf = (key: TransferKey) => ({
  chainId: key.chainId,
  transactionHash: key.transactionHash.toLowerCase(),
  logIndex: key.logIndex,
});

/** Records an indexed outgoing transfer, unmatched; answers false when it was recorded already. */
export async function insertOutgoingTransfer(
  trx: Kysely<Database>,
  params: { transfer: IndexedTransfer; partnerId: string | null; now: number },
): Promise<boolean> {
  assertInTransaction(trx, "outgoing_transfer");
  const { transfer } = params;
  const result = await trx
    .insertInto("outgoing_transfer")
    .values({
      ...storedTransferColumns({
        ...transfer,
        amount: transfer.value,
        minedAt: Number(transfer.blockTimestamp) * 1000,
      }),
      partner_id: params.partnerId,
      token_address: transfer.token.toLowerCase(),
      status: "unmatched",
      refund_id: null,
      created_at: params.now,
      updated_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return result.numInsertedOrUpdatedRows === 1n;
}

export async function findOutgoingTransfer(db: Kysely<Database>, key: TransferKey): Promise<OutgoingTransfer | undefined> {
  const k = keyOf(key);
  const row = await db
    .selectFrom("outgoing_transfer")
    .selectAll()
    .where("chain_id", "=", k.chainId)
    .where("transaction_hash", "=", k.transactionHash)
    .where("log_index", "=", k.logIndex)
    .executeTakeFirst();
  return row === undefined ? undefined : toOutgoingTransfer(row);
}

/** Of these transfers of one chain, the keys already recorded. */
export async function recordedOutgoingKeys(
  db: Kysely<Database>,
  params: { chainId: number; transactionHashes: string[] },
): Promise<Set<LogKey>> {
  if (params.transactionHashes.length === 0) return new Set();
  const rows = await db
    .selectFrom("outgoing_transfer")
    .select(["transaction_hash", "log_index"])
    .where("chain_id", "=", params.chainId)
    .where("transaction_hash", "in", [...new Set(params.transactionHashes.map((hash) => hash.toLowerCase()))])
    .execute();
  return new Set(
    rows.map((row) => logKey({ chainId: params.chainId, transactionHash: row.transaction_hash, logIndex: row.log_index })),
  );
}

/**
 * Applies `transition`: `match` links the refund, `reorg` forgets the link and
 * `restore` takes the block it is mined in now. Answers false when the row moved meanwhile.
 */
export async function moveOutgoingTransfer<name extends OutgoingTransferTransition>(
  trx: Kysely<Database>,
  params: {
    transfer: TransferKey & { status: OutgoingTransferStatus };
    transition: name;
    now: number;
  } & InputField<(typeof outgoingTransferTransitions)[name]>,
): Promise<boolean> {
  assertInTransaction(trx, "outgoing_transfer");
  const move = planMove<OutgoingTransferStatus, OutgoingTransferTransition, OutgoingTransferTable>(
    "outgoing_transfer",
    outgoingTransferTransitions,
    params.transition,
    { current: params.transfer.status, input: params.input, now: params.now },
  );
  if (move.refused !== undefined) return false;
  const k = keyOf(params.transfer);
  let update = trx
    .updateTable("outgoing_transfer")
    .set({ ...move.set, status: move.to, updated_at: params.now })
    .where("chain_id", "=", k.chainId)
    .where("transaction_hash", "=", k.transactionHash)
    .where("log_index", "=", k.logIndex)
    .where("status", "=", params.transfer.status);
  if (params.transition === "match") update = update.where("refund_id", "is", null);
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** An outgoing transfer re-mined in another block by a reorg: same status, new block. */
export async function relocateOutgoingTransfer(
  trx: Kysely<Database>,
  params: { transfer: TransferKey; block: { number: bigint; hash: Hex }; now: number },
): Promise<void> {
  const k = keyOf(params.transfer);
  await trx
    .updateTable("outgoing_transfer")
    .set({ block_number: Number(params.block.number), block_hash: params.block.hash.toLowerCase(), updated_at: params.now })
    .where("chain_id", "=", k.chainId)
    .where("transaction_hash", "=", k.transactionHash)
    .where("log_index", "=", k.logIndex)
    .execute();
}

/** Outgoing transfers of a chain mined within [fromBlock, toBlock] (the reorg watch and the re-match). */
export async function outgoingTransfersBetween(
  db: Kysely<Database>,
  params: { chainId: number; fromBlock: bigint; toBlock: bigint; statuses: readonly OutgoingTransferStatus[]; limit: number },
): Promise<OutgoingTransfer[]> {
  const rows = await db
    .selectFrom("outgoing_transfer")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("status", "in", [...params.statuses])
    .where("block_number", ">=", Number(params.fromBlock))
    .where("block_number", "<=", Number(params.toBlock))
    .orderBy("block_number")
    .orderBy("log_index")
    .limit(params.limit)
    .execute();
  return rows.map(toOutgoingTransfer);
}

/** Reorged outgoing transfers of a chain (the watch looks for them back in the index). */
export async function reorgedOutgoingTransfers(
  db: Kysely<Database>,
  params: { chainId: number; limit: number },
): Promise<OutgoingTransfer[]> {
  const rows = await db
    .selectFrom("outgoing_transfer")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("status", "=", "reorged")
    .limit(params.limit)
    .execute();
  return rows.map(toOutgoingTransfer);
}

/**
 * For the ledger: how each outgoing transfer named was recorded, keyed by
 * its `LogKey` (api/values/log-key.ts). A key the record does not hold (not
 * indexed yet, or not from a payment address) is absent from the answer. A reorged
 * transfer answers `unmatched` with no refund: it moved no money on the chain as it is now.
 */
export async function outgoingTransfersByKeys(
  db: Kysely<Database>,
  keys: { chainId: number; transactionHash: Hex; logIndex: number }[],
): Promise<Map<LogKey, { status: "matched" | "unmatched"; refundId: string | null }>> {
  const answer = new Map<LogKey, { status: "matched" | "unmatched"; refundId: string | null }>();
  if (keys.length === 0) return answer;
  const wanted = new Set(keys.map((key) => logKey(key)));
  const rows = await db
    .selectFrom("outgoing_transfer")
    .select(["chain_id", "transaction_hash", "log_index", "status", "refund_id"])
    .where("transaction_hash", "in", [...new Set(keys.map((key) => key.transactionHash.toLowerCase()))])
    .execute();
  for (const row of rows) {
    const key = logKey({ chainId: row.chain_id, transactionHash: row.transaction_hash, logIndex: row.log_index });
    if (!wanted.has(key)) continue;
    answer.set(
      key,
      row.status === "matched" ? { status: "matched", refundId: row.refund_id } : { status: "unmatched", refundId: null },
    );
  }
  return answer;
}

/**
 * The transactions (lower-case hashes) of the transfers out of these addresses in
 * blocks [fromBlock, toBlock] that were matched to a refund (the reconciliation reads
 * only the transfers whose ledger kind is not `unmatched_out`, api/accounting/).
 */
export async function matchedOutgoingTransactions(
  db: Kysely<Database>,
  params: { chainId: number; senders: readonly string[]; fromBlock: bigint; toBlock: bigint },
): Promise<Set<string>> {
  if (params.senders.length === 0) return new Set();
  const rows = await db
    .selectFrom("outgoing_transfer")
    .select("transaction_hash")
    .distinct()
    .where("chain_id", "=", params.chainId)
    .where("status", "=", "matched")
    .where(
      "from_address",
      "in",
      params.senders.map((address) => address.toLowerCase()),
    )
    .where("block_number", ">=", Number(params.fromBlock))
    .where("block_number", "<=", Number(params.toBlock))
    .execute();
  return new Set(rows.map((row) => row.transaction_hash.toLowerCase()));
}
