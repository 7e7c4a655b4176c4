/** USDC has 6 decimals; amounts are bigint base units everywhere and decimal strings in JSON and the store. */
export const USDC_DECIMALS = 6;

/** Parses a canonical decimal string of base units (no sign, no leading zeros, no exponent). */
export function parseBaseUnits(value: string): bigint {
  if (!/^(0|[1-9]\d*)$/.test(value)) throw new Error(`not a base-unit amount: ${value}`);
  return BigInt(value);
}

export const formatBaseUnits = (value: bigint): string => value.toString();
