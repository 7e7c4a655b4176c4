import { type Address, isAddressEqual, zeroAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { problem } from "../http/problem.js";
import { forgetFunding, readFunding } from "./funding.js";
import { outstandingRewardsOfPartner } from "./reward-record.js";
import { rewardSettingsOf, updateRewardSettings } from "./reward-settings.js";

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

/** `PUT /v1/rewards/settings`: a partial update; the funding address may be neither zero nor a token. */
export async function writeRewardSettings(
  context: AppContext,
  params: { partnerId: string; fundingAddress?: Address; cashbackBps?: number },
) {
  if (params.fundingAddress !== undefined) {
    const funding = params.fundingAddress;
    if (isAddressEqual(funding, zeroAddress) || context.networks.some((network) => isAddressEqual(network.usdc, funding))) {
      throw problem(
        "invalid_funding_address",
        "The funding address must be the partner's own wallet: not the zero address, not the token.",
      );
    }
  }
  const now = Date.now();
  const updated = await context.store.transaction().execute((trx) => updateRewardSettings(trx, { ...params, now }));
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
