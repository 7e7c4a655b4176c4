import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, getAddress, type Hex, recoverTypedDataAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  CERTIFICATE_DOMAIN_NAME,
  CERTIFICATE_DOMAIN_VERSION,
  type CertificateVoucher,
  certificateVoucherDomain,
  certificateVoucherTypes,
  signCertificateVoucher,
} from "../../api/certificates/voucher-typed-data.js";
import { AuthorizationBody, toSubmission } from "../../api/gasless/authorization-schema.js";
import {
  type TokenDomain,
  type TransferAuthorization,
  transferAuthorizationTypedData,
  transferWithAuthorizationTypes,
} from "../../api/gasless/eip3009.js";
import {
  REWARD_DOMAIN_NAME,
  REWARD_DOMAIN_VERSION,
  type RewardVoucher,
  rewardIdOnChain,
  rewardVoucherDomain,
  rewardVoucherTypes,
  signRewardVoucher,
} from "../../api/rewards/reward-voucher.js";
import {
  cancelTypes,
  SUBSCRIPTION_DOMAIN_NAME,
  SUBSCRIPTION_DOMAIN_VERSION,
  subscriptionTypes,
} from "../../api/subscriptions/subscription-terms.js";

/**
 * The service's EIP-712 signatures, checked with viem's local accounts (pure, no chain):
 * what the service signs recovers to its signer, and changing any signed field or any
 * part of the domain recovers to another address, which the contract refuses.
 */

// Fixed test keys (Anvil's first two well-known accounts): signer and stranger.
const SIGNER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" as Hex;
const STRANGER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as Hex;
const signer = privateKeyToAccount(SIGNER_KEY);
const stranger = privateKeyToAccount(STRANGER_KEY);

const CHAIN_ID = 31337;
const CONTRACT = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const OTHER_CONTRACT = getAddress("0xe7f1725e7734ce288f8367e1bb143e90bb3f0512");
const BUYER = getAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
const OTHER = getAddress("0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc");

const contractSource = (name: string) => readFileSync(join(import.meta.dirname, "..", "..", "contracts", name), "utf8");

/** `Name(type field,…)` as EIP-712 encodes a struct with no nested types. */
const encodeType = (name: string, fields: readonly { name: string; type: string }[]) =>
  `${name}(${fields.map((field) => `${field.type} ${field.name}`).join(",")})`;

describe("the typed data matches the contracts that verify it", () => {
  it("certificate voucher: CertificateNFT's VOUCHER typehash string and EIP712 name/version", () => {
    const source = contractSource("CertificateNFT.sol");
    expect(source).toContain(`keccak256("${encodeType("Voucher", certificateVoucherTypes.Voucher)}")`);
    expect(source).toContain(`EIP712("${CERTIFICATE_DOMAIN_NAME}", "${CERTIFICATE_DOMAIN_VERSION}")`);
  });

  it("reward voucher: RewardDistributor's REWARD_VOUCHER typehash string and EIP712 name/version", () => {
    const source = contractSource("RewardDistributor.sol");
    expect(source).toContain(`"${encodeType("RewardVoucher", rewardVoucherTypes.RewardVoucher)}"`);
    expect(source).toContain(`EIP712("${REWARD_DOMAIN_NAME}", "${REWARD_DOMAIN_VERSION}")`);
  });

  it("subscription terms and cancel: SubscriptionManager's typehash strings and EIP712 name/version", () => {
    const source = contractSource("SubscriptionManager.sol");
    expect(source).toContain(`"${encodeType("Subscription", subscriptionTypes.Subscription)}"`);
    expect(source).toContain(`keccak256("${encodeType("Cancel", cancelTypes.Cancel)}")`);
    expect(source).toContain(`EIP712("${SUBSCRIPTION_DOMAIN_NAME}", "${SUBSCRIPTION_DOMAIN_VERSION}")`);
  });

  it("EIP-3009: TestUSDC's TRANSFER_WITH_AUTHORIZATION typehash string", () => {
    expect(contractSource("TestUSDC.sol")).toContain(
      `"${encodeType("TransferWithAuthorization", transferWithAuthorizationTypes.TransferWithAuthorization)}"`,
    );
  });
});

describe("certificate voucher", () => {
  const voucher: CertificateVoucher = {
    buyer: BUYER,
    purchaseId: `0x${"ab".repeat(32)}`,
    tokenURI: "https://pay.example/certificates/ord_1.json",
    deadline: 1_800_000_000n,
  };
  const sign = () => signCertificateVoucher({ privateKey: SIGNER_KEY, chainId: CHAIN_ID, contract: CONTRACT, voucher });
  const recover = (signature: Hex, change: { voucher?: Partial<CertificateVoucher>; chainId?: number; contract?: Address }) =>
    recoverTypedDataAddress({
      domain: certificateVoucherDomain({ chainId: change.chainId ?? CHAIN_ID, contract: change.contract ?? CONTRACT }),
      types: certificateVoucherTypes,
      primaryType: "Voucher",
      message: { ...voucher, ...change.voucher },
      signature,
    });

  it("recovers to the service's signer over the domain {name, version, chainId, contract}", async () => {
    expect(certificateVoucherDomain({ chainId: CHAIN_ID, contract: CONTRACT })).toEqual({
      name: "Settlement Certificate",
      version: "1",
      chainId: CHAIN_ID,
      verifyingContract: CONTRACT,
    });
    expect(await recover(await sign(), {})).toBe(signer.address);
  });

  it.each([
    ["buyer", { voucher: { buyer: OTHER } }],
    ["purchaseId (one bit)", { voucher: { purchaseId: `0x${"ab".repeat(31)}aa` as Hex } }],
    ["tokenURI", { voucher: { tokenURI: "https://pay.example/certificates/ord_2.json" } }],
    ["deadline (one second later)", { voucher: { deadline: 1_800_000_001n } }],
    ["chain id (replayed on another chain)", { chainId: 8453 }],
    ["verifying contract (replayed on another deployment)", { contract: OTHER_CONTRACT }],
  ] as const)("a tampered %s recovers to another address", async (_field, change) => {
    const recovered = await recover(await sign(), change);
    expect(recovered).not.toBe(signer.address);
  });

  it("a voucher signed by another key does not recover to the service's signer", async () => {
    const forged = await signCertificateVoucher({
      privateKey: STRANGER_KEY,
      chainId: CHAIN_ID,
      contract: CONTRACT,
      voucher,
    });
    expect(await recover(forged, {})).toBe(stranger.address);
    expect(stranger.address).not.toBe(signer.address);
  });
});

describe("reward voucher", () => {
  const voucher: RewardVoucher = {
    rewardId: rewardIdOnChain("rw_unit_1"),
    funder: getAddress("0x90f79bf6eb2c4f870365e785982e1f101e93b906"),
    recipient: BUYER,
    token: getAddress("0x036cbd53842c5426634e7929541ec2318f3dcf7e"),
    amount: 1_500_000n,
    deadline: 1_800_000_000n,
  };
  const sign = () => signRewardVoucher({ privateKey: SIGNER_KEY, chainId: CHAIN_ID, contract: CONTRACT, voucher });
  const recover = (signature: Hex, change: { voucher?: Partial<RewardVoucher>; chainId?: number; contract?: Address }) =>
    recoverTypedDataAddress({
      domain: rewardVoucherDomain({ chainId: change.chainId ?? CHAIN_ID, contract: change.contract ?? CONTRACT }),
      types: rewardVoucherTypes,
      primaryType: "RewardVoucher",
      message: { ...voucher, ...change.voucher },
      signature,
    });

  it("recovers to the service's signer", async () => {
    expect(await recover(await sign(), {})).toBe(signer.address);
  });

  it.each([
    ["rewardId (another reward's)", { voucher: { rewardId: rewardIdOnChain("rw_unit_2") } }],
    ["funder", { voucher: { funder: OTHER } }],
    ["recipient", { voucher: { recipient: OTHER } }],
    ["token", { voucher: { token: OTHER } }],
    ["amount (one base unit more)", { voucher: { amount: 1_500_001n } }],
    ["deadline", { voucher: { deadline: 1_800_086_400n } }],
    ["chain id", { chainId: 84532 }],
    ["verifying contract", { contract: OTHER_CONTRACT }],
  ] as const)("a tampered %s recovers to another address", async (_field, change) => {
    expect(await recover(await sign(), change)).not.toBe(signer.address);
  });
});

describe("EIP-3009 transfer authorization", () => {
  const domain: TokenDomain = { name: "USD Coin", version: "2", chainId: CHAIN_ID, verifyingContract: CONTRACT };
  const authorization: TransferAuthorization = {
    from: signer.address,
    to: BUYER,
    value: 25_000_017n,
    validAfter: 0n,
    validBefore: 1_800_000_000n,
    nonce: `0x${"5a".repeat(32)}`,
  };
  const sign = () => signer.signTypedData(transferAuthorizationTypedData(domain, authorization));
  const recover = (signature: Hex, change: { message?: Partial<TransferAuthorization>; domain?: Partial<TokenDomain> }) =>
    recoverTypedDataAddress({
      ...transferAuthorizationTypedData({ ...domain, ...change.domain }, { ...authorization, ...change.message }),
      signature,
    });

  it("is the token's domain and the TransferWithAuthorization struct, as the wallet signs it", async () => {
    const typed = transferAuthorizationTypedData(domain, authorization);
    expect(typed.primaryType).toBe("TransferWithAuthorization");
    expect(typed.domain).toBe(domain);
    expect(typed.message).toBe(authorization);
    expect(await recover(await sign(), {})).toBe(authorization.from);
  });

  it.each([
    ["from", { message: { from: OTHER } }],
    ["to (the payment address swapped)", { message: { to: OTHER } }],
    ["value (one base unit less)", { message: { value: 25_000_016n } }],
    ["validAfter", { message: { validAfter: 1n } }],
    ["validBefore", { message: { validBefore: 1_800_000_001n } }],
    ["nonce", { message: { nonce: `0x${"5b".repeat(32)}` as Hex } }],
    ["domain name (another token)", { domain: { name: "USDC" } }],
    ["domain version", { domain: { version: "1" } }],
    ["domain chain id", { domain: { chainId: 8453 } }],
    ["domain verifying contract", { domain: { verifyingContract: OTHER_CONTRACT } }],
  ] as const)("a tampered %s does not recover to the payer", async (_field, change) => {
    expect(await recover(await sign(), change)).not.toBe(authorization.from);
  });
});

describe("the authorization body a customer's wallet posts", () => {
  const body = {
    authorization: {
      from: signer.address.toLowerCase(),
      to: BUYER,
      value: "25000017",
      validAfter: "0",
      validBefore: "1800000000",
      nonce: `0x${"5A".repeat(32)}`,
    },
    signature: `0x${"11".repeat(65)}`,
  };
  const withAuthorization = (change: Record<string, unknown>) => ({
    ...body,
    authorization: { ...body.authorization, ...change },
  });

  it("becomes a submission: EIP-55 addresses, bigint amounts and times, a lower-case nonce", () => {
    const parsed = AuthorizationBody.parse({ ...body, domain: { chainId: CHAIN_ID, verifyingContract: CONTRACT.toLowerCase() } });
    expect(toSubmission(parsed)).toEqual({
      authorization: {
        from: signer.address,
        to: BUYER,
        value: 25_000_017n,
        validAfter: 0n,
        validBefore: 1_800_000_000n,
        nonce: `0x${"5a".repeat(32)}`,
      },
      signature: body.signature,
      domain: { chainId: CHAIN_ID, verifyingContract: CONTRACT },
    });
    expect(toSubmission(AuthorizationBody.parse(body)).domain).toBeUndefined();
  });

  it("takes the largest uint256 written out (78 digits) and a long smart-wallet signature", () => {
    const max = (2n ** 256n - 1n).toString();
    expect(max).toHaveLength(78);
    const parsed = AuthorizationBody.parse({ ...withAuthorization({ value: max }), signature: `0x${"22".repeat(500)}` });
    expect(toSubmission(parsed).authorization.value).toBe(2n ** 256n - 1n);
  });

  it.each([
    ["a value with a leading zero", withAuthorization({ value: "025000017" })],
    ["a negative value", withAuthorization({ value: "-1" })],
    ["a value with decimals", withAuthorization({ value: "25.000017" })],
    ["a value as a JSON number", withAuthorization({ value: 25000017 })],
    ["a value of 79 digits", withAuthorization({ value: `1${"0".repeat(78)}` })],
    ["validBefore in hex", withAuthorization({ validBefore: "0x6b49d200" })],
    ["a nonce of 31 bytes", withAuthorization({ nonce: `0x${"5a".repeat(31)}` })],
    ["a nonce without 0x", withAuthorization({ nonce: "5a".repeat(33) })],
    ["a from that is not an address", withAuthorization({ from: "0x1234" })],
    ["an unknown field in the authorization", withAuthorization({ data: "0x" })],
    ["a signature one byte short of 65", { ...body, signature: `0x${"11".repeat(64)}` }],
    ["a signature that is not hex", { ...body, signature: `0x${"zz".repeat(65)}` }],
    ["a domain chain id of 0", { ...body, domain: { chainId: 0 } }],
    ["a domain chain id with a fraction", { ...body, domain: { chainId: 1.5 } }],
    ["a domain contract that is not an address", { ...body, domain: { verifyingContract: "usdc" } }],
  ] as const)("refuses %s", (_case, input) => {
    expect(AuthorizationBody.safeParse(input).success).toBe(false);
  });
});
