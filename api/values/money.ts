/** USDC has 6 decimals; amounts are bigint base units everywhere and decimal strings in JSON and the store. */
export const USDC_DECIMALS = 6;
