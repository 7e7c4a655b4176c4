/** USDC base units (6 decimals) as a person writes them: "25.00 USDC", "25.000042 USDC". Never a float. */
export function formatUsdc(baseUnits: string | bigint): string {
  const value = BigInt(baseUnits);
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const whole = abs / 1_000_000n;
  let fraction = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  const grouped = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${negative ? "-" : ""}${grouped}.${fraction} USDC`;
}

/** "25.5" → 25500000n; at most 6 decimals; undefined when it is not a plain positive decimal. */
export function parseUsdc(text: string): bigint | undefined {
  const match = /^\s*(\d{1,12})(?:\.(\d{1,6}))?\s*$/.exec(text.replaceAll(",", ""));
  if (match === null) return undefined;
  return BigInt(match[1] as string) * 1_000_000n + BigInt((match[2] ?? "").padEnd(6, "0"));
}
