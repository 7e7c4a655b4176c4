import { type Address, getAddress } from "viem";

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
