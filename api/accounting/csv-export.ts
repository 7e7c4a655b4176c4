/**
 * RFC 4180 CSV for the accounting exports (docs/accounting.md, "CSV"): CRLF line
 * ends, every cell that holds a comma, a quote or a line break quoted, quotes
 * doubled. A text cell that a spreadsheet would read as a formula (it starts with
 * `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with `'`; a whole
 * number (a signed difference) is left as it is.
 */
export type CsvValue = string | number | bigint | boolean | null | undefined;

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return "";
  let text = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text) && !/^-\d+$/.test(text)) text = `'${text}`;
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

/** Whether the client asked for CSV (`Accept: text/csv`). */
export function wantsCsv(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/csv\b/i.test(accept);
}

/** Stable columns of each export, documented in docs/accounting.md. */
export const LEDGER_COLUMNS = [
  "kind",
  "reason",
  "chain_id",
  "block_number",
  "block_hash",
  "transaction_hash",
  "log_index",
  "from",
  "to",
  "value",
  "payment_address",
  "order_id",
  "refund_id",
  "reward_id",
] as const;

export const RECONCILIATION_COLUMNS = [
  "chain_id",
  "partner_id",
  "payment_address",
  "from_block",
  "to_block",
  "opening_balance",
  "closing_balance",
  "chain_balance",
  "difference",
  "reconciled",
  "settled",
  "underpaid",
  "overpaid",
  "late",
  "unmatched_in",
  "refund",
  "unmatched_out",
  "reward_claim",
] as const;

export const ORDER_COLUMNS = [
  "id",
  "external_order_id",
  "status",
  "network",
  "chain_id",
  "total_price_usdc",
  "amount_paid",
  "transaction_hash",
  "log_index",
  "block_number",
  "payer",
  "payment_address",
  "created_at",
  "updated_at",
  "metadata",
] as const;
