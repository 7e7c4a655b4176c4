import { type Address, getAddress, type Hex } from "viem";

/**
 * An address as responses and events show it: EIP-55 checksum case (docs/http-conventions.md,
 * "Addresses"). The store keeps addresses lowercase, so that lookups and uniqueness
 * never depend on case; inputs take any case. Views and event builders call this
 * where a row becomes what a partner, a browser or a portal reads.
 */
export function checksum(address: string): Address {
  return getAddress(address);
}

export function checksumOrNull(address: string | null | undefined): Address | null {
  return address === null || address === undefined ? null : getAddress(address);
}

/**
 * An address or hash in the index's form: lower-case hex, as Ponder and the store keep
 * it (an `IndexedTransfer` built from a receipt takes this form, like one read from the index).
 */
export function indexForm<value extends Hex>(value: value): Hex {
  return `0x${value.slice(2).toLowerCase()}`;
}

/** Whether two hashes (block, transaction, bytes32 ids) are the same, whatever the case of either. */
export function sameHex(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
