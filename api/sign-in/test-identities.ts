import { type Address, isAddressEqual } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import type { PortalRole } from "../store/portal-tables.js";

/**
 * Local mode's console test accounts (api/sign-in/test-accounts.ts): one per role, from
 * Anvil's well-known development mnemonic (accounts 10 to 13, past the ten that Anvil
 * funds and the tests pay from). Their keys are public, so outside local mode they are
 * nobody: no portal admits them, whatever roles a store or ADMIN_ADDRESSES gives them
 * (issue 40). The local relayer has a key of its own (local/local-secrets.ts).
 */
const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

export const TEST_ACCOUNT_INDEX: Record<PortalRole, number> = { admin: 10, partner: 11, issuer: 12, investor: 13 };

export function testAccount(role: PortalRole) {
  return mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: TEST_ACCOUNT_INDEX[role] });
}

let addresses: Address[] | undefined;

/** The address of a role's test account (the local stack seeds its role). */
export function testAccountAddress(role: PortalRole): Address {
  return testAccount(role).address;
}

/** Whether an address is one of the test accounts, of any role. */
export function isTestAccount(address: string): boolean {
  addresses ??= (Object.keys(TEST_ACCOUNT_INDEX) as PortalRole[]).map(testAccountAddress);
  return addresses.some((candidate) => isAddressEqual(candidate, address as Address));
}
