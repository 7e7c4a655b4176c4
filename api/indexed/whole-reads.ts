import type { Hex } from "viem";

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
