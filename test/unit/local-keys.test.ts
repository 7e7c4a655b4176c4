import { isAddressEqual } from "viem";
import { describe, expect, it } from "vitest";
import { TEST_ACCOUNT_INDEX, testAccountAddress } from "../../api/sign-in/test-accounts.js";
import { anvilAccounts, LOCAL_RELAYER_ACCOUNT_INDEX, localRelayerAccount } from "../../local/local-secrets.js";
import { serviceEnvForMode } from "../../local/local-stack.js";

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

describe("a service the local stack starts outside local mode", () => {
  it("gets ADMIN_ADDRESSES without the admin test account; in local mode it keeps it", () => {
    const admin = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    const testAdmin = testAccountAddress("admin");
    const env = { ADMIN_ADDRESSES: `${admin},${testAdmin.toLowerCase()}` };
    expect(serviceEnvForMode({ ...env, LOCAL_MODE: "false" }).ADMIN_ADDRESSES).toBe(admin);
    expect(serviceEnvForMode({ ...env }).ADMIN_ADDRESSES).toBe(admin);
    expect(serviceEnvForMode({ ...env, LOCAL_MODE: "true" }).ADMIN_ADDRESSES).toBe(env.ADMIN_ADDRESSES);
  });
});
