import { type Address, type Hex, hashTypedData, keccak256, type TypedDataDomain, toHex } from "viem";
import type { TokenDomain } from "../gasless/eip3009.js";

/** Must match the EIP712 constructor arguments of contracts/SubscriptionManager.sol. */
export const SUBSCRIPTION_DOMAIN_NAME = "SubscriptionManager";
export const SUBSCRIPTION_DOMAIN_VERSION = "1";

/** `end` when the partner set none: the largest uint48, so the terms never run out. */
export const OPEN_ENDED = 2 ** 48 - 1;

export const subscriptionTypes = {
  Subscription: [
    { name: "subscriber", type: "address" },
    { name: "payee", type: "address" },
    { name: "token", type: "address" },
    { name: "amount", type: "uint256" },
    { name: "period", type: "uint48" },
    { name: "start", type: "uint48" },
    { name: "end", type: "uint48" },
    { name: "salt", type: "uint256" },
  ],
} as const;

export const cancelTypes = { Cancel: [{ name: "id", type: "bytes32" }] } as const;

/**
 * The terms a subscriber signs. `period`, `start` and `end` are Unix seconds, uint48 on chain: a
 * `number` holds every uint48 exactly, and it is the type viem gives them in calls and events.
 */
export type SubscriptionTerms = {
  subscriber: Address;
  payee: Address;
  token: Address;
  amount: bigint;
  period: number;
  start: number;
  end: number;
  salt: bigint;
};

export function subscriptionDomain(params: { chainId: number; contract: Address }): TypedDataDomain {
  return {
    name: SUBSCRIPTION_DOMAIN_NAME,
    version: SUBSCRIPTION_DOMAIN_VERSION,
    chainId: params.chainId,
    verifyingContract: params.contract,
  };
}

/** The salt of a subscription's terms: keccak256 of its API id (`sub_…`), so two subscriptions never share an id. */
export function subscriptionSalt(subscriptionId: string): bigint {
  return BigInt(keccak256(toHex(subscriptionId)));
}

/** What the subscriber's wallet signs (`eth_signTypedData_v4`). */
export function subscriptionTypedData(params: { chainId: number; contract: Address; terms: SubscriptionTerms }) {
  return {
    domain: subscriptionDomain(params),
    types: subscriptionTypes,
    primaryType: "Subscription" as const,
    message: params.terms,
  };
}

/** The subscription's on-chain id: the terms' EIP-712 hash, known before anything is sent. */
export function subscriptionIdOnChain(params: { chainId: number; contract: Address; terms: SubscriptionTerms }): Hex {
  return hashTypedData(subscriptionTypedData(params));
}

/** What the subscriber signs to cancel without gas (`cancelWithSignature`). */
export function cancelTypedData(params: { chainId: number; contract: Address; onchainId: Hex }) {
  return {
    domain: subscriptionDomain(params),
    types: cancelTypes,
    primaryType: "Cancel" as const,
    message: { id: params.onchainId },
  };
}

/** EIP-2612 as USDC and our TestUSDC implement it: what the subscriber signs so `subscribeWithPermit` sets the allowance. */
export const permitTypes = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

export type PermitMessage = { owner: Address; spender: Address; value: bigint; nonce: bigint; deadline: bigint };

/** The permit's typed data in the token's own domain (`readTokenDomain`); `nonce` is the token's `nonces(owner)`. */
export function permitTypedData(tokenDomain: TokenDomain, permit: PermitMessage) {
  return { domain: tokenDomain, types: permitTypes, primaryType: "Permit" as const, message: permit };
}
