import { randomBytes } from "node:crypto";
import { type Address, getTypesForEIP712Domain, type Hex, type PublicClient, parseAbi, toHex } from "viem";
import type { CheckoutSession } from "../checkout/session-record.js";

/**
 * EIP-3009 as USDC implements it (FiatToken v2.2 on Base, and our local TestUSDC):
 * the typed data a holder signs and the calls the relayer makes. Only this subset
 * of the ABI, so it fits Circle's token and ours alike.
 */
export const eip3009Abi = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
]);

export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

export type TransferAuthorization = {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
};

export type TokenDomain = { name: string; version: string; chainId: number; verifyingContract: Address };

const domainCache = new Map<string, Promise<TokenDomain>>();

/**
 * The token's own EIP-712 domain: ERC-5267 `eip712Domain()` where the token has it
 * (our TestUSDC), else `name()` and `version()` (Circle's USDC: "USD Coin", "2" on
 * Base). Read once per token and kept: a token's domain does not change.
 */
export function readTokenDomain(client: PublicClient, params: { token: Address; chainId: number }): Promise<TokenDomain> {
  const key = `${params.chainId}:${params.token.toLowerCase()}`;
  let cached = domainCache.get(key);
  if (cached === undefined) {
    cached = readDomainFromChain(client, params);
    domainCache.set(key, cached);
    cached.catch(() => domainCache.delete(key));
  }
  return cached;
}

async function readDomainFromChain(client: PublicClient, params: { token: Address; chainId: number }): Promise<TokenDomain> {
  try {
    const [, name, version] = await client.readContract({ address: params.token, abi: eip3009Abi, functionName: "eip712Domain" });
    return { name, version, chainId: params.chainId, verifyingContract: params.token };
  } catch {
    const [name, version] = await Promise.all([
      client.readContract({ address: params.token, abi: eip3009Abi, functionName: "name" }),
      client.readContract({ address: params.token, abi: eip3009Abi, functionName: "version" }),
    ]);
    return { name, version, chainId: params.chainId, verifyingContract: params.token };
  }
}

/** The typed data the holder signs, as viem takes it (bigints): the service verifies a signature against it. */
export function transferAuthorizationTypedData(domain: TokenDomain, authorization: TransferAuthorization) {
  return {
    domain,
    types: transferWithAuthorizationTypes,
    primaryType: "TransferWithAuthorization" as const,
    message: authorization,
  };
}

/**
 * The last second an authorization paying `session` may be valid to (its `validBefore`): the
 * session's expiry in whole seconds, rounded down. The typed data the service serves uses it,
 * and the service refuses a later one (`authorization_outlives_session`).
 */
export function lastValidSecond(session: Pick<CheckoutSession, "expiresAt">): bigint {
  return BigInt(Math.floor(session.expiresAt / 1000));
}

/** A fresh random EIP-3009 nonce (the token refuses a nonce used before by the same holder). */
export function randomAuthorizationNonce(): Hex {
  return toHex(randomBytes(32));
}

/**
 * Typed data as a wallet's `eth_signTypedData_v4` takes it, JSON throughout: numbers as
 * decimal strings, and the `EIP712Domain` type list the wallet hashes the domain with
 * (viem derives it from the domain, so it is never written out). What the service serves
 * to be signed: the hosted page and the console sign it as they receive it.
 */
export function transferAuthorizationTypedDataForWallet(domain: TokenDomain, authorization: TransferAuthorization) {
  return {
    types: {
      EIP712Domain: getTypesForEIP712Domain({ domain }),
      TransferWithAuthorization: [...transferWithAuthorizationTypes.TransferWithAuthorization],
    },
    primaryType: "TransferWithAuthorization" as const,
    domain,
    message: {
      from: authorization.from,
      to: authorization.to,
      value: authorization.value.toString(),
      validAfter: authorization.validAfter.toString(),
      validBefore: authorization.validBefore.toString(),
      nonce: authorization.nonce,
    },
  };
}

/**
 * What `from` signs to pay `session` without gas (a checkout's session read with its payer, a
 * purchase's gasless read): exactly the amount due, to the session's payment address, valid
 * from the start until `lastValidSecond`, with a fresh random nonce, over the token's domain.
 */
export function paymentTypedDataForWallet(
  domain: TokenDomain,
  session: Pick<CheckoutSession, "paymentAddress" | "amountDue" | "expiresAt">,
  from: Address,
) {
  return transferAuthorizationTypedDataForWallet(domain, {
    from,
    to: session.paymentAddress,
    value: session.amountDue,
    validAfter: 0n,
    validBefore: lastValidSecond(session),
    nonce: randomAuthorizationNonce(),
  });
}
