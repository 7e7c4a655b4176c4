import type { AppContext } from "../app-context.js";
import { listRefunds } from "../refunds/refunds.js";
import type { OrderStatus } from "../store/database.js";
import type { RefundStatus } from "../store/refund-tables.js";
import { checksum } from "../values/checksum-address.js";
import {
  type CsvValue,
  csvStream,
  LEDGER_COLUMNS,
  ORDER_COLUMNS,
  RECONCILIATION_COLUMNS,
  REFUND_COLUMNS,
  withUsdc,
} from "./csv-export.js";
import { type BookEntry, type BooksScope, blockTimeOf, booksInView, ledgerPage, ledgerPages } from "./ledger.js";
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
  const { addresses, funders } = await booksInView(context, params.scope, range.chainId);
  return csvStream(
    LEDGER_COLUMNS,
    ledgerPages(context, { partnerId: params.scope.partnerId, range, addresses, funders }),
    ledgerCsvCells,
  );
}

/** One ledger row's cells, in LEDGER_COLUMNS' order. */
export function ledgerCsvCells(entry: BookEntry): CsvValue[] {
  return [
    entry.kind,
    entry.reason,
    entry.chainId,
    entry.blockNumber,
    blockTimeOf(entry.blockTimestamp),
    entry.blockHash,
    entry.transactionHash,
    entry.logIndex,
    // The same checksummed addresses as the JSON answer (ledger.ts), so the CSV equals it.
    checksum(entry.from),
    checksum(entry.to),
    ...withUsdc(entry.value),
    checksum(entry.paymentAddress),
    entry.orderId,
    entry.externalOrderId,
    entry.refundId,
    entry.rewardId,
    entry.metadata === undefined ? undefined : JSON.stringify(entry.metadata),
    entry.adjustment?.periodId,
    entry.adjustment?.entryKind,
    ...withUsdc(entry.adjustment?.balanceEffect),
  ];
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
    row.role,
    report.fromBlock,
    report.toBlock,
    ...withUsdc(row.openingBalance),
    ...withUsdc(row.closingBalance),
    ...withUsdc(row.chainBalance),
    ...withUsdc(row.difference),
    row.reconciled,
    ...SUM_KINDS.flatMap((kind) => withUsdc(row.sums[kind])),
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
    // `totalPriceUsdc` of the JSON order holds base units: here it is `total_price` and its decimal twin.
    ...withUsdc(order.totalPriceUsdc),
    ...withUsdc(order.amountPaid),
    ...withUsdc(order.amountRefunded),
    order.refundStatus,
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

/** `GET /v1/refunds` as CSV: every refund the filters select, newest first as the JSON pages list them, one row each. */
export function refundsCsv(
  context: Pick<AppContext, "store">,
  params: { partnerId: string; orderId?: string; paymentId?: string; status?: RefundStatus },
) {
  async function* pages() {
    let cursor: string | undefined;
    do {
      const page = await listRefunds(context.store, { ...params, cursor, limit: 200 });
      if (page.data.length > 0) yield page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
  return csvStream(REFUND_COLUMNS, pages(), (refund) => [
    refund.id,
    refund.status,
    refund.orderId,
    refund.externalOrderId,
    refund.payment.chainId,
    refund.payment.transactionHash,
    refund.payment.logIndex,
    ...withUsdc(refund.amount),
    refund.reason,
    refund.note,
    refund.destination,
    refund.transactionHash,
    refund.createdAt,
    refund.readyAt,
    refund.succeededAt,
    refund.cancelledAt,
  ]);
}

export { orderEvidence };
