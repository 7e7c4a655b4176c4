import type { AppContext } from "../app-context.js";
import type { OrderStatus } from "../store/database.js";
import { checksum } from "../values/checksum-address.js";
import { csvStream, LEDGER_COLUMNS, ORDER_COLUMNS, RECONCILIATION_COLUMNS } from "./csv-export.js";
import { type BooksScope, booksAddresses, ledgerPage, ledgerPages } from "./ledger.js";
import { SUM_KINDS } from "./ledger-rules.js";
import { orderEvidence, ordersInRange } from "./order-evidence.js";
import { parseRange, type RangeQuery, resolveRange } from "./range.js";
import { reconcile, reconciliationRowView } from "./reconciliation.js";

/** The accounting reports as the routes call them: a range in, JSON or a CSV stream out (docs/accounting.md). */
const rangeOf = (context: AppContext, query: RangeQuery) => resolveRange(context, parseRange(query));

export async function ledgerReport(
  context: AppContext,
  params: { scope: BooksScope; query: RangeQuery; cursor?: string; limit: number },
) {
  const range = await rangeOf(context, params.query);
  const page = await ledgerPage(context, { scope: params.scope, range, cursor: params.cursor, limit: params.limit });
  return { fromBlock: range.fromBlock.toString(), toBlock: range.toBlock.toString(), ...page };
}

export async function ledgerCsv(context: AppContext, params: { scope: BooksScope; query: RangeQuery }) {
  const range = await rangeOf(context, params.query);
  const addresses = new Set((await booksAddresses(context, params.scope, range.chainId)).map((row) => row.address));
  return csvStream(LEDGER_COLUMNS, ledgerPages(context, { range, addresses }), (entry) => [
    entry.kind,
    entry.reason,
    entry.chainId,
    entry.blockNumber,
    entry.blockHash,
    entry.transactionHash,
    entry.logIndex,
    // The same checksummed addresses as the JSON answer (ledger.ts), so the CSV equals it.
    checksum(entry.from),
    checksum(entry.to),
    entry.value,
    checksum(entry.paymentAddress),
    entry.orderId,
    entry.refundId,
    entry.rewardId,
  ]);
}

export async function reconciliationReport(context: AppContext, params: { scope: BooksScope; query: RangeQuery }) {
  const range = await rangeOf(context, params.query);
  const result = await reconcile(context, { scope: params.scope, range });
  return {
    fromBlock: result.fromBlock.toString(),
    toBlock: result.toBlock.toString(),
    data: result.rows.map(reconciliationRowView),
  };
}

export async function reconciliationCsv(context: AppContext, params: { scope: BooksScope; query: RangeQuery }) {
  const report = await reconciliationReport(context, params);
  async function* one() {
    yield report.data;
  }
  return csvStream(RECONCILIATION_COLUMNS, one(), (row) => [
    row.chainId,
    row.partnerId,
    row.paymentAddress,
    report.fromBlock,
    report.toBlock,
    row.openingBalance,
    row.closingBalance,
    row.chainBalance,
    row.difference,
    row.reconciled,
    ...SUM_KINDS.map((kind) => row.sums[kind]),
  ]);
}

export async function ordersReport(
  context: AppContext,
  params: { scope: BooksScope; query: RangeQuery; status?: OrderStatus; cursor?: string; limit: number },
) {
  const range = await rangeOf(context, params.query);
  return ordersInRange(context, { ...params, range });
}

export async function ordersCsv(context: AppContext, params: { scope: BooksScope; query: RangeQuery; status?: OrderStatus }) {
  const range = await rangeOf(context, params.query);
  async function* pages() {
    let cursor: string | undefined;
    do {
      const page = await ordersInRange(context, { ...params, range, cursor, limit: 200 });
      if (page.data.length > 0) yield page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
  return csvStream(ORDER_COLUMNS, pages(), (order) => [
    order.id,
    order.externalOrderId,
    order.status,
    order.network,
    order.chainId,
    order.totalPriceUsdc,
    order.amountPaid,
    order.payment?.transactionHash,
    order.payment?.logIndex,
    order.payment?.blockNumber,
    order.payment?.from,
    order.payment?.to,
    order.createdAt,
    order.updatedAt,
    JSON.stringify(order.metadata),
  ]);
}

export { orderEvidence };
