import type { Hex } from "viem";
import { type LogKey, logKey } from "../values/log-key.js";
import type { IndexedChain, IndexedTransfer } from "./indexed-chain.js";

/** Transaction hashes per read of the index: a bounded IN list. */
const HASHES_PER_READ = 200;
/** Rows per page of one read's answer. */
const ROWS_PER_READ = 5_000;

/**
 * Every row `read` finds, page by page: each page asked after the last row of the one
 * before (in the reader's own order, block then log index) until a page comes back short.
 */
export async function readAllPages<row>(
  read: (page: { after: row | undefined; limit: number }) => Promise<row[]>,
): Promise<row[]> {
  const rows: row[] = [];
  let after: row | undefined;
  for (;;) {
    const page = await read({ after, limit: ROWS_PER_READ });
    rows.push(...page);
    if (page.length < ROWS_PER_READ) return rows;
    after = page.at(-1);
  }
}

/**
 * Every row `read` finds for these transactions: a few hundred hashes per read, each
 * read whole (readAllPages), so a transaction with thousands of logs is read whole.
 */
export async function readByTransactions<row>(
  transactionHashes: readonly Hex[],
  read: (page: { transactionHashes: Hex[]; after: row | undefined; limit: number }) => Promise<row[]>,
): Promise<row[]> {
  const rows: row[] = [];
  for (let start = 0; start < transactionHashes.length; start += HASHES_PER_READ) {
    const chunk = transactionHashes.slice(start, start + HASHES_PER_READ);
    rows.push(...(await readAllPages<row>((page) => read({ transactionHashes: chunk, ...page }))));
  }
  return rows;
}

/**
 * Every indexed transfer of one chain mined within [fromBlock, toBlock], by its `LogKey`:
 * the window the reorg watches (settlement's payments, the refund worker's outgoing
 * transfers) compare what they recorded with.
 */
export async function indexedTransfersByKey(
  indexed: Pick<IndexedChain, "transfers">,
  window: { chainId: number; fromBlock: bigint; toBlock: bigint },
): Promise<Map<LogKey, IndexedTransfer>> {
  const transfers = await readAllPages<IndexedTransfer>(({ after, limit }) =>
    indexed.transfers({ chainIds: [window.chainId], fromBlock: window.fromBlock, toBlock: window.toBlock, after, limit }),
  );
  return new Map(transfers.map((transfer) => [logKey(transfer), transfer]));
}
