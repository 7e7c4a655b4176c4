import { type Address, type Hex, isAddressEqual, zeroAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { problem } from "../http/problem.js";
import { forgetFunding, readFunding } from "./funding.js";
import { checkFundingProof, consumeFundingChallenge, type FundingProof } from "./funding-proof.js";
import { outstandingRewardsOfPartner } from "./reward-record.js";
import { partnerHoldingFunder, provenFunder, rewardSettingsOf, updateRewardSettings } from "./reward-settings.js";

/**
 * The settings answer (SPEC 16): what the partner set, the distributor to approve,
 * and the funding address's allowance and balance (one read, cached ≤ 10 s) against
 * its outstanding rewards, with a warning when they fall short. One network: the
 * first enabled network with a distributor.
 */
export async function readRewardSettings(context: AppContext, partnerId: string) {
  const settings = await rewardSettingsOf(context.store, partnerId);
  const network = context.networks.find((candidate) => candidate.rewardDistributor !== undefined);
  const outstanding = (await outstandingRewardsOfPartner(context.store, partnerId))
    .filter((reward) => network === undefined || reward.chainId === network.chainId)
    .reduce((sum, reward) => sum + reward.amount, 0n);
  const client = network === undefined ? undefined : context.rpc.get(network.chainId);
  const funding =
    network?.rewardDistributor === undefined || client === undefined || settings.fundingAddress === null
      ? undefined
      : await readFunding(client, {
          chainId: network.chainId,
          token: network.usdc,
          funder: settings.fundingAddress,
          distributor: network.rewardDistributor,
        });
  const warnings: ("allowance_below_outstanding" | "balance_below_outstanding")[] = [];
  if (funding !== undefined && funding.allowance < outstanding) warnings.push("allowance_below_outstanding");
  if (funding !== undefined && funding.balance < outstanding) warnings.push("balance_below_outstanding");
  return {
    fundingAddress: settings.fundingAddress,
    fundingProven: settings.fundingProvenAt !== null,
    fundingProvenAt: settings.fundingProvenAt === null ? null : new Date(settings.fundingProvenAt).toISOString(),
    cashbackBps: settings.cashbackBps,
    distributor:
      network?.rewardDistributor === undefined ? null : { address: network.rewardDistributor, chainId: network.chainId },
    /** The token the rewards are paid in (the console approves the distributor on it). */
    token: network?.rewardDistributor === undefined ? null : network.usdc,
    allowance: funding?.allowance.toString() ?? null,
    balance: funding?.balance.toString() ?? null,
    outstanding: outstanding.toString(),
    warnings,
  };
}

/**
 * `PUT /v1/rewards/settings`: a partial update. A new funding address must come with
 * its proof (`fundingProof`: the challenge of `POST /v1/rewards/settings/funding-challenge`
 * signed by that address) and may not be another partner's proven funding address;
 * naming the current proven address again needs no proof (it changes nothing). The
 * proof's nonce is consumed in the settings' own transaction, so one proof sets one
 * address once.
 */
export async function writeRewardSettings(
  context: AppContext,
  params: { partnerId: string; fundingAddress?: Address; fundingProof?: FundingProof; cashbackBps?: number },
) {
  const now = Date.now();
  const current = await rewardSettingsOf(context.store, params.partnerId);
  const funding = params.fundingAddress;
  if (funding === undefined && params.fundingProof !== undefined) {
    throw problem("invalid_funding_proof", "A funding proof comes with the funding address it proves.", {
      reason: "no_funding_address",
    });
  }
  const provenNow = provenFunder(current);
  const unchanged =
    funding !== undefined && params.fundingProof === undefined && provenNow !== undefined && isAddressEqual(funding, provenNow);
  let proof: { address: Address; nonce: string; message: string; signature: Hex } | undefined;
  if (funding !== undefined && !unchanged) {
    if (isAddressEqual(funding, zeroAddress) || context.networks.some((network) => isAddressEqual(network.usdc, funding))) {
      throw problem(
        "invalid_funding_address",
        "The funding address must be the partner's own wallet: not the zero address, not the token.",
      );
    }
    if (params.fundingProof === undefined) {
      throw problem(
        "invalid_funding_proof",
        "A new funding address needs its proof: sign the message of POST /v1/rewards/settings/funding-challenge with it.",
        { reason: "missing" },
      );
    }
    await assertFunderFree(context.store, { partnerId: params.partnerId, address: funding });
    const nonce = await checkFundingProof(context, {
      partnerId: params.partnerId,
      fundingAddress: funding,
      proof: params.fundingProof,
      now,
    });
    proof = { address: funding, nonce, ...params.fundingProof };
  }
  const updated = await context.store
    .transaction()
    .execute(async (trx) => {
      if (proof !== undefined && !(await consumeFundingChallenge(trx, { nonce: proof.nonce, now }))) {
        throw problem("invalid_funding_proof", "This challenge was used; request a new one.", { reason: "challenge_used" });
      }
      return updateRewardSettings(trx, {
        partnerId: params.partnerId,
        cashbackBps: params.cashbackBps,
        funding: proof === undefined ? undefined : { address: proof.address, message: proof.message, signature: proof.signature },
        now,
      });
    })
    .catch(async (error: unknown) => {
      // The unique index over proven funding addresses: a concurrent proof of the same address by another partner won.
      if (proof !== undefined) await assertFunderFree(context.store, { partnerId: params.partnerId, address: proof.address });
      throw error;
    });
  // A new funding address (or one just approved) is read afresh.
  for (const network of context.networks) {
    if (network.rewardDistributor !== undefined && updated.fundingAddress !== null) {
      forgetFunding({
        chainId: network.chainId,
        token: network.usdc,
        funder: updated.fundingAddress,
        distributor: network.rewardDistributor,
      });
    }
  }
  return readRewardSettings(context, params.partnerId);
}

async function assertFunderFree(db: AppContext["store"], params: { partnerId: string; address: Address }): Promise<void> {
  const holder = await partnerHoldingFunder(db, params.address);
  if (holder !== undefined && holder !== params.partnerId) {
    throw problem("funding_address_taken", "This funding address is another partner's; a funding address pays one partner only.");
  }
}
