/**
 * The shop's own catalogue: prices live here, in USDC base units (bigint), and
 * nowhere else. The browser only ever sends product ids and quantities.
 */
export type Product = {
  id: string;
  name: string;
  category: string;
  description: string;
  priceUsdc: bigint;
  /** Physical goods need a delivery address at checkout. */
  ships: boolean;
  /** Comes with an on-chain certificate of purchase. */
  certificate: boolean;
};

export const CATALOGUE: readonly Product[] = [
  {
    id: "tee-blue",
    name: "Blue organic tee",
    category: "apparel",
    description: "Heavy cotton, printed in Porto. With a certificate of authenticity.",
    priceUsdc: 25_000_000n,
    ships: true,
    certificate: true,
  },
  {
    id: "poster-a2",
    name: "Limited poster (A2)",
    category: "prints",
    description: "Numbered edition of 200, signed. With a certificate of authenticity.",
    priceUsdc: 12_500_000n,
    ships: true,
    certificate: true,
  },
  {
    id: "field-guide",
    name: "Field guide (e-book)",
    category: "books",
    description: "PDF and EPUB, delivered by email.",
    priceUsdc: 4_990_000n,
    ships: false,
    certificate: false,
  },
];

export const productById = (id: string): Product | undefined => CATALOGUE.find((product) => product.id === id);

export type CartLine = { product: Product; quantity: number };

/** The order total from the catalogue, in base units: bigint arithmetic, no float anywhere. */
export function cartTotal(lines: readonly CartLine[]): bigint {
  return lines.reduce((total, line) => total + line.product.priceUsdc * BigInt(line.quantity), 0n);
}
