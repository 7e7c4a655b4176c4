import { USDC_DECIMALS } from "../values/money.js";
import { SUM_KINDS } from "./ledger-rules.js";

/**
 * RFC 4180 CSV for the accounting exports (docs/accounting.md, "CSV"): CRLF line
 * ends, every cell that holds a comma, a quote or a line break quoted, quotes
 * doubled. A text cell that a spreadsheet would read as a formula (it starts with
 * `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with `'`; a number
 * (a signed difference, in base units or in USDC) is left as it is.
 */
export type CsvValue = string | number | bigint | boolean | null | undefined;

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return "";
  let text = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text) && !/^-\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(cells: readonly CsvValue[]): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}

/**
 * A CSV body streamed page by page: the header, then each page's rows as the pages
 * come; nothing holds more than one page. Pulled by the client: a slow reader slows
 * the reads instead of filling memory.
 */
export function csvStream<row>(header: readonly string[], pages: AsyncIterable<row[]>, cells: (row: row) => CsvValue[]) {
  const encoder = new TextEncoder();
  const iterator = pages[Symbol.asyncIterator]();
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(csvLine(header)));
        return;
      }
      const next = await iterator.next();
      if (next.done) {
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(next.value.map((row) => csvLine(cells(row))).join("")));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/**
 * A base-unit amount as decimal USDC, the twin column `<name>_usdc` of SPEC 17.1:
 * six decimals, `-` for a negative, no thousands separator; empty where the base
 * cell is empty. Exact: digits are moved, never divided in floating point.
 */
export function usdcDecimal(baseUnits: bigint | string | null | undefined): string | undefined {
  if (baseUnits === null || baseUnits === undefined || baseUnits === "") return undefined;
  const value = BigInt(baseUnits);
  const digits = (value < 0n ? -value : value).toString().padStart(USDC_DECIMALS + 1, "0");
  const split = digits.length - USDC_DECIMALS;
  return `${value < 0n ? "-" : ""}${digits.slice(0, split)}.${digits.slice(split)}`;
}

/** A base-unit amount and its decimal twin, the two cells of every amount column. */
export const withUsdc = (baseUnits: bigint | string | null | undefined): [CsvValue, CsvValue] => [
  baseUnits,
  usdcDecimal(baseUnits),
];

/** The headers of a CSV answer: a download named for the report, never cached. */
export const csvResponseHeaders = (name: string) => ({
  "Content-Type": "text/csv; charset=utf-8",
  "Content-Disposition": `attachment; filename="${name}.csv"`,
  "Cache-Control": "no-store",
});

/** Whether the client asked for CSV (`Accept: text/csv`). */
export function wantsCsv(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/csv\b/i.test(accept);
}

/** Stable columns of each export, documented in docs/accounting.md (SPEC 17.1: base units bare, decimal USDC as `<name>_usdc`). */
export const LEDGER_COLUMNS = [
  "kind",
  "reason",
  "chain_id",
  "block_number",
  "block_time",
  "block_hash",
  "transaction_hash",
  "log_index",
  "from",
  "to",
  "value",
  "value_usdc",
  "payment_address",
  "order_id",
  "external_order_id",
  "refund_id",
  "reward_id",
  "metadata",
  // An `adjustment` row's closed period, the kind its fact had, and what it changes of the balance.
  "period_id",
  "entry_kind",
  "balance_effect",
  "balance_effect_usdc",
] as const;

const withTwin = <name extends string>(name: name) => [name, `${name}_usdc` as const] as const;

export const RECONCILIATION_COLUMNS = [
  "chain_id",
  "partner_id",
  "payment_address",
  "role",
  "from_block",
  "to_block",
  ...withTwin("opening_balance"),
  ...withTwin("closing_balance"),
  ...withTwin("chain_balance"),
  ...withTwin("difference"),
  "reconciled",
  ...SUM_KINDS.flatMap(withTwin),
] as const;

export const ORDER_COLUMNS = [
  "id",
  "external_order_id",
  "status",
  "network",
  "chain_id",
  ...withTwin("total_price"),
  ...withTwin("amount_paid"),
  ...withTwin("amount_refunded"),
  "refund_status",
  "transaction_hash",
  "log_index",
  "block_number",
  "payer",
  "payment_address",
  "created_at",
  "updated_at",
  "metadata",
] as const;

export const REFUND_COLUMNS = [
  "id",
  "status",
  "order_id",
  "external_order_id",
  "chain_id",
  "payment_transaction_hash",
  "payment_log_index",
  ...withTwin("amount"),
  "reason",
  "note",
  "destination",
  "transaction_hash",
  "created_at",
  "ready_at",
  "succeeded_at",
  "cancelled_at",
] as const;
