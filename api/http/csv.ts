/**
 * RFC 4180 CSV. Cells that a spreadsheet would read as a formula (=, +, -, @, tab,
 * carriage return at the start) are prefixed with an apostrophe, so an offering or
 * issuer name cannot smuggle a formula into an issuer's export.
 */
export function toCsv(header: string[], rows: (string | number | boolean | null)[][]): string {
  const cell = (value: string | number | boolean | null) => {
    if (value === null) return "";
    let text = String(value);
    if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return `${[header, ...rows].map((row) => row.map(cell).join(",")).join("\r\n")}\r\n`;
}
