import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { type Address, getAddress, type Hex, isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { problem } from "../http/problem.js";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";

/**
 * Proof that a funding address is the partner's (issue 40): the service issues a
 * challenge naming the partner, the address, the chain, the distributor and a
 * single-use nonce; the address signs it (EIP-191; a contract wallet through
 * EIP-1271 or EIP-6492, as the chain's public client checks); `PUT
 * /v1/rewards/settings` hands it back. Without it, any partner could name another
 * partner's approved wallet and have the distributor pay its rewards from it.
 * The only module that reads or writes `reward_funding_challenge`.
 */

/** How long a challenge may be signed and handed back. */
export const FUNDING_CHALLENGE_TTL_MS = 10 * 60_000;

export type FundingProof = { message: string; signature: Hex };

const invalidProof = (reason: string, detail: string) => problem("invalid_funding_proof", detail, { reason });

/** `POST /v1/rewards/settings/funding-challenge`: the exact text `fundingAddress` signs for this partner. */
export async function issueFundingChallenge(
  context: AppContext,
  params: { partnerId: string; fundingAddress: Address; now?: number },
): Promise<{ message: string; expiresAt: string }> {
  const now = params.now ?? Date.now();
  const network = context.networks.find((candidate) => candidate.rewardDistributor !== undefined);
  if (network?.rewardDistributor === undefined) {
    throw problem("rewards_unavailable", "No network of this service has a reward distributor.");
  }
  // Whole seconds: the message carries ISO instants and the stored ones must equal them.
  const issuedAt = Math.floor(now / 1000) * 1000;
  const expiresAt = issuedAt + FUNDING_CHALLENGE_TTL_MS;
  const nonce = randomBytes(16).toString("hex");
  const address = getAddress(params.fundingAddress);
  const message = [
    "Prove a reward funding address",
    "",
    `I control ${address} and let partner ${params.partnerId} pay its USDC rewards from it through the reward distributor ${network.rewardDistributor} on chain ${network.chainId}.`,
    "",
    `Partner: ${params.partnerId}`,
    `Funding address: ${address}`,
    `Chain ID: ${network.chainId}`,
    `Distributor: ${network.rewardDistributor}`,
    `Nonce: ${nonce}`,
    `Issued at: ${new Date(issuedAt).toISOString()}`,
    `Expires at: ${new Date(expiresAt).toISOString()}`,
    "",
    "Signing moves no funds and costs no gas.",
  ].join("\n");
  await context.store.transaction().execute(async (trx) => {
    // Challenges live minutes; drop those long past so the table stays small.
    await trx
      .deleteFrom("reward_funding_challenge")
      .where("expires_at", "<", now - 24 * 3_600_000)
      .execute();
    await trx
      .insertInto("reward_funding_challenge")
      .values({
        nonce,
        partner_id: params.partnerId,
        funding_address: address.toLowerCase(),
        chain_id: network.chainId,
        message,
        issued_at: issuedAt,
        expires_at: expiresAt,
        consumed_at: null,
      })
      .execute();
  });
  return { message, expiresAt: new Date(expiresAt).toISOString() };
}

/**
 * Checks a proof without consuming it: the exact message this service issued to this
 * partner for this address, unused and unexpired, signed by that address. Another
 * partner's challenge reads as unknown. Answers the challenge's nonce, which
 * `consumeFundingChallenge` then takes in the settings' transaction.
 */
export async function checkFundingProof(
  context: AppContext,
  params: { partnerId: string; fundingAddress: Address; proof: FundingProof; now?: number },
): Promise<string> {
  const now = params.now ?? Date.now();
  const nonce = /^Nonce: ([0-9a-f]{32})$/m.exec(params.proof.message)?.[1];
  const challenge =
    nonce === undefined
      ? undefined
      : await context.store.selectFrom("reward_funding_challenge").selectAll().where("nonce", "=", nonce).executeTakeFirst();
  if (challenge === undefined || challenge.partner_id !== params.partnerId) {
    throw invalidProof("unknown_challenge", "The message is not a funding challenge this service issued to you.");
  }
  if (challenge.consumed_at !== null) throw invalidProof("challenge_used", "This challenge was used; request a new one.");
  if (now >= Number(challenge.expires_at)) throw invalidProof("challenge_expired", "This challenge expired; request a new one.");
  if (params.proof.message !== challenge.message) {
    throw invalidProof("message_altered", "The signed message differs from the challenge; sign it unchanged.");
  }
  if (!isAddressEqual(getAddress(challenge.funding_address), params.fundingAddress)) {
    throw invalidProof("wrong_address", "The challenge was issued for another funding address.");
  }
  const client = context.rpc.get(challenge.chain_id);
  if (client === undefined || networkByChainId(context, challenge.chain_id) === undefined) {
    throw invalidProof("wrong_chain", "The challenge's chain is no longer enabled on this service; request a new one.");
  }
  let valid: boolean;
  try {
    valid = await client.verifyMessage({
      address: params.fundingAddress,
      message: challenge.message,
      signature: params.proof.signature,
    });
  } catch (error) {
    throw problem(
      "signature_check_unavailable",
      `The chain's node did not answer the signature check; try again. (${String(error).slice(0, 200)})`,
    );
  }
  if (!valid) throw invalidProof("invalid_signature", "The signature is not the funding address's signature of this message.");
  return challenge.nonce;
}

/** Marks a challenge used inside the caller's transaction; false when another request used it first. */
export async function consumeFundingChallenge(trx: Kysely<Database>, params: { nonce: string; now: number }): Promise<boolean> {
  assertInTransaction(trx, "reward funding challenge");
  const result = await trx
    .updateTable("reward_funding_challenge")
    .set({ consumed_at: params.now })
    .where("nonce", "=", params.nonce)
    .where("consumed_at", "is", null)
    .where("expires_at", ">", params.now)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
