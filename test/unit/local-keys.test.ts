import { isAddressEqual } from "viem";
import { describe, expect, it } from "vitest";
import { TEST_ACCOUNT_INDEX, testAccountAddress } from "../../api/sign-in/test-accounts.js";
import { anvilAccounts, LOCAL_RELAYER_ACCOUNT_INDEX, localRelayerAccount } from "../../local/local-secrets.js";

// Issue 40: the local relayer signed with the admin test account's key (both Anvil account 10).
describe("local keys, one per role", () => {
  it("the relayer's key is its own: no console test account and none of the accounts tools and tests pay from", () => {
    const relayer = localRelayerAccount().address;
    for (const role of ["admin", "partner", "issuer", "investor"] as const) {
      expect(isAddressEqual(relayer, testAccountAddress(role)), role).toBe(false);
    }
    for (const account of anvilAccounts()) expect(isAddressEqual(relayer, account.address)).toBe(false);
    expect(Object.values(TEST_ACCOUNT_INDEX)).not.toContain(LOCAL_RELAYER_ACCOUNT_INDEX);
    const roles = Object.values(TEST_ACCOUNT_INDEX);
    expect(new Set(roles).size).toBe(roles.length);
  });
});
