/**
 * USDC amounts are bigint base units (6 decimals) in code and decimal strings on the
 * wire. A float never touches money: numbers are refused.
 */
export const USDC_DECIMALS = 6;
const UNIT = 10n ** BigInt(USDC_DECIMALS);

/** A base-unit amount from the API (`"25000123"`) or your code (`25_000_123n`) as a bigint. */
export function toBaseUnits(value: bigint | string): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "string" && /^(0|[1-9]\d*)$/.test(value)) return BigInt(value);
  throw new TypeError(
    `Expected USDC base units as a bigint or a decimal integer string (25 USDC = 25000000n), got ${describe(value)}.`,
  );
}

/** `"25.000123"` (a USDC decimal) → `25000123n`; more than 6 decimals is an error, never rounded. */
export function parseUsdc(decimal: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(decimal.trim());
  if (match === null) throw new TypeError(`Not a USDC amount with at most 6 decimals: ${JSON.stringify(decimal)}.`);
  return BigInt(match[1] as string) * UNIT + BigInt((match[2] ?? "").padEnd(USDC_DECIMALS, "0"));
}

/** `25000123n` → `"25.000123"`; always six decimals, so the displayed amount is exact. */
export function formatUsdc(baseUnits: bigint | string): string {
  const value = toBaseUnits(baseUnits);
  const sign = value < 0n ? "-" : "";
  const abs = value < 0n ? -value : value;
  return `${sign}${abs / UNIT}.${(abs % UNIT).toString().padStart(USDC_DECIMALS, "0")}`;
}

/** For a request body: a positive amount as the decimal string the API expects. */
export function baseUnitsString(value: bigint | string, field: string): string {
  if (typeof value === "number") {
    throw new TypeError(
      `${field}: pass USDC base units as a bigint (25_000_000n) or an integer string ("25000000"), not a number.`,
    );
  }
  const amount = toBaseUnits(value);
  if (amount <= 0n) throw new TypeError(`${field}: must be a positive amount of base units.`);
  return amount.toString();
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : `a ${typeof value}`;
}
