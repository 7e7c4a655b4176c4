import { type Address, type Hex, isAddressEqual, type PublicClient } from "viem";
import type { ProblemCode, ProblemError } from "../http/problem.js";
import { eip3009Abi, readTokenDomain, type TransferAuthorization, transferAuthorizationTypedData } from "./eip3009.js";

/**
 * The checks of a signed EIP-3009 `TransferWithAuthorization` before the relayer sends
 * it, shared by a gasless checkout payment (submit-authorization.ts) and a relayed
 * refund (api/refunds/refund-relay.ts): what it must say, then what the chain must allow.
 * Each caller words its own refusals (a checkout is paid, a refund is sent) and gives its
 * problem's title through `refuse`; the codes are the same.
 */

/** Seconds an authorization must still be valid for, so the relayer's transaction can be mined before `validBefore` (Base: a few blocks). */
export const MIN_REMAINING_VALIDITY_SECONDS = 20n;

export type AuthorizationSubmission = {
  authorization: TransferAuthorization;
  signature: Hex;
  /** What the wallet signed against, when the page says so: must be the expected network and token. */
  domain?: { chainId?: number; verifyingContract?: Address };
};

export type Refuse = (code: ProblemCode, detail: string, status?: 409 | 422 | 503) => ProblemError;

/**
 * What the authorization must say: the network and token it was signed for (when the page
 * names them), the recipient, the exact amount and, when one is required, the payer.
 */
export function assertAuthorizationTerms(
  submission: AuthorizationSubmission,
  expected: { chainId: number; token: Address; to: Address; value: bigint; from?: Address },
  say: {
    /** "This checkout is paid", "This refund is sent": the start of the network and token refusals. */
    subject: string;
    /** The wrong recipient's detail. */
    recipient: string;
    /** The wrong payer's detail. */
    payer: string;
  },
  refuse: Refuse,
): void {
  const { authorization, domain } = submission;
  if (domain?.chainId !== undefined && domain.chainId !== expected.chainId) {
    throw refuse("authorization_wrong_network", `${say.subject} on chain ${expected.chainId}.`);
  }
  if (domain?.verifyingContract !== undefined && !isAddressEqual(domain.verifyingContract, expected.token)) {
    throw refuse("authorization_wrong_token", `${say.subject} in USDC at ${expected.token}.`);
  }
  if (expected.from !== undefined && !isAddressEqual(authorization.from, expected.from)) {
    throw refuse("authorization_wrong_payer", say.payer);
  }
  if (!isAddressEqual(authorization.to, expected.to)) throw refuse("authorization_wrong_recipient", say.recipient);
  if (authorization.value !== expected.value) {
    throw refuse(
      "authorization_wrong_amount",
      `The authorization must move exactly ${expected.value} base units (it moves ${authorization.value}).`,
    );
  }
}

/**
 * What the chain must allow, read now: valid from the latest block on and long enough to
 * be mined, signed by its `from` over the token's own EIP-712 domain, not used or
 * cancelled, and covered by the signer's balance.
 */
export async function assertAuthorizationOnChain(
  client: PublicClient,
  params: { chainId: number; token: Address; submission: AuthorizationSubmission },
  say: { signature: string; balance: (balance: bigint) => string },
  refuse: Refuse,
): Promise<void> {
  const { authorization, signature } = params.submission;
  const block = await client.getBlock({ blockTag: "latest" });
  if (authorization.validAfter >= block.timestamp) {
    throw refuse("authorization_not_yet_valid", `validAfter (${authorization.validAfter}) is not yet past on chain.`);
  }
  if (authorization.validBefore <= block.timestamp + MIN_REMAINING_VALIDITY_SECONDS) {
    throw refuse("authorization_expired", "The authorization expires before it could be mined; sign a new one.");
  }
  const domain = await readTokenDomain(client, { token: params.token, chainId: params.chainId });
  const validSignature = await client
    .verifyTypedData({ address: authorization.from, signature, ...transferAuthorizationTypedData(domain, authorization) })
    .catch(() => false);
  if (!validSignature) throw refuse("authorization_bad_signature", say.signature);
  const [balance, used] = await Promise.all([
    client.readContract({ address: params.token, abi: eip3009Abi, functionName: "balanceOf", args: [authorization.from] }),
    client.readContract({
      address: params.token,
      abi: eip3009Abi,
      functionName: "authorizationState",
      args: [authorization.from, authorization.nonce],
    }),
  ]);
  if (used) throw refuse("authorization_used", "The token has already used or cancelled this authorization.", 409);
  if (balance < authorization.value) throw refuse("authorization_insufficient_balance", say.balance(balance));
}
