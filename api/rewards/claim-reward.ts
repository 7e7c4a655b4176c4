import { type Address, encodeFunctionData, getAddress, type Hex } from "viem";
import { rewardDistributorAbi } from "../../contracts/generated/index.js";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { assertRelayAllowed, assertRelayedAmount, type RelayCharge } from "../gasless/relay-charges.js";
import { type RelayedCall, type Relayer, RelayFailure, relayContractCall, relayerOf } from "../gasless/relayer.js";
import { problem } from "../http/problem.js";
import { fundingCovers, readFunding } from "./funding.js";
import { indexedSecondsOf } from "./revoke-reward.js";
import { findReward, moveReward, type Reward, vouchersOutOfFunder } from "./reward-record.js";
import { provenFunder, rewardSettingsOf } from "./reward-settings.js";
import { type RewardVoucher, signRewardVoucher } from "./reward-voucher.js";

/** A voucher is good for one hour (never past the claim window): long enough to send, short enough to revoke soon. */
export const REWARD_VOUCHER_LIFETIME_SECONDS = 3_600;

export type RewardClaimAnswer =
  | {
      voucher: {
        rewardId: Hex;
        funder: Address;
        recipient: Address;
        token: Address;
        amount: string;
        deadline: string;
      };
      signature: Hex;
      contract: { address: Address; chainId: number };
      transaction: { to: Address; data: Hex; chainId: number };
    }
  | { transactionHash: Hex };

const notClaimable = (reason: string, detail: string, extensions: Record<string, unknown> = {}) =>
  problem("reward_not_claimable", detail, { reason, ...extensions });

/**
 * Issues the voucher of a reward for `walletAddress` (SPEC 16): refused for a
 * reward that is not (or no longer) claimable and, before any voucher, when the
 * funder's allowance or balance cannot cover this reward plus its other vouchers
 * still out (`reward_unfunded`). The reward moves to `voucher_issued` before the
 * voucher is signed, so a voucher never exists that the record does not know.
 * With `gasless`, the service's relayer sends the claim and the answer is its hash.
 */
export async function claimReward(
  context: AppContext,
  params: { reward: Reward; walletAddress: Address; gasless: boolean; now?: number },
): Promise<RewardClaimAnswer> {
  const now = params.now ?? Date.now();
  const { reward } = params;
  const recipient = getAddress(params.walletAddress);
  const indexedSeconds = await indexedSecondsOf(context.indexed, reward.chainId);
  switch (reward.status) {
    case "revoked":
    case "expired":
    case "claimed":
      throw notClaimable(reward.status, `The reward is ${reward.status}.`);
    case "pending":
      throw notClaimable("claim_pending", "The reward's claim is on chain and being confirmed.");
  }
  if (reward.revocationDue !== null) {
    // Its order was fully refunded while a voucher was out: no new voucher, and revoked once that one lapsed.
    await context.store
      .transaction()
      .execute((trx) =>
        moveReward(trx, { reward, transition: "revoke", input: { indexedSeconds, reason: reward.revocationDue as string }, now }),
      );
    throw notClaimable("revoked", "The reward was withdrawn: its order was refunded.");
  }
  if (now >= reward.expiresAt) throw notClaimable("expired", "The reward's claim window has ended.");
  if (
    reward.status === "voucher_issued" &&
    reward.voucherDeadlineSeconds !== null &&
    reward.voucherDeadlineSeconds >= indexedSeconds
  ) {
    throw notClaimable("voucher_out", "A voucher of this reward is out; a new one can be issued after its deadline.", {
      retryAfter: new Date(Number(reward.voucherDeadlineSeconds + 1n) * 1000).toISOString(),
      recipient: reward.recipient,
    });
  }
  const network = networkByChainId(context, reward.chainId);
  const client = context.rpc.get(reward.chainId);
  const privateKey = context.settings.voucherPrivateKey;
  if (network?.rewardDistributor === undefined || client === undefined || privateKey === undefined) {
    throw problem("rewards_unavailable", "Rewards are not offered on this reward's network.");
  }
  const relayer = params.gasless ? relayerOf(context, network, context.store) : undefined;
  if (params.gasless && relayer === undefined) {
    throw problem(
      "gasless_unavailable",
      `Claiming without gas is not offered on ${network.name}; claim from a wallet that holds ETH.`,
    );
  }
  // Refused by the relayer's limits before a voucher is issued (checked again, with the price, as it sends);
  // a reward below the smallest relayed amount costs more gas than it pays (docs/gasless.md).
  if (relayer !== undefined) {
    assertRelayedAmount(context.settings.relayLimits, reward.amount);
    await assertRelayAllowed(context.store, context.settings.relayLimits, rewardCharge(reward));
  }
  const settings = await rewardSettingsOf(context.store, reward.partnerId);
  // Only a funding address the partner proved is its own may be named as the voucher's funder (issue 40).
  const funder = provenFunder(settings);
  if (funder === undefined) {
    throw problem("rewards_not_configured", "The shop has not set up its reward funding.");
  }
  const nowSeconds = BigInt(Math.floor(now / 1000));
  const others = await vouchersOutOfFunder(context.store, {
    chainId: reward.chainId,
    funder,
    deadlineAfterSeconds: Number(nowSeconds),
  });
  const alreadyOut = others.filter((other) => other.id !== reward.id).reduce((sum, other) => sum + other.amount, 0n);
  const funding = await readFunding(client, {
    chainId: reward.chainId,
    token: reward.token,
    funder,
    distributor: reward.distributor,
    now,
  });
  if (!fundingCovers(funding, reward.amount, alreadyOut)) {
    throw problem(
      "reward_unfunded",
      "The shop's reward funding cannot cover this reward right now; try again later or contact the shop.",
    );
  }

  const windowEnd = BigInt(Math.floor(reward.expiresAt / 1000));
  const deadline = nowSeconds + BigInt(REWARD_VOUCHER_LIFETIME_SECONDS);
  const voucher: RewardVoucher = {
    rewardId: reward.onchainId,
    funder,
    recipient,
    token: reward.token,
    amount: reward.amount,
    deadline: deadline < windowEnd ? deadline : windowEnd,
  };
  const issued = await context.store.transaction().execute((trx) =>
    moveReward(trx, {
      reward,
      transition: "issueVoucher",
      input: { indexedSeconds, recipient, funder, deadlineSeconds: voucher.deadline },
      now,
    }),
  );
  if (!issued.moved) {
    const current = (await findReward(context.store, reward.id)) as Reward;
    throw notClaimable(current.status === "pending" ? "claim_pending" : current.status, issued.reason);
  }
  const signature = await signRewardVoucher({ privateKey, chainId: reward.chainId, contract: reward.distributor, voucher });
  const data = encodeFunctionData({ abi: rewardDistributorAbi, functionName: "claim", args: [voucher, signature] });
  if (relayer !== undefined) {
    return { transactionHash: await relayClaim(context, relayer, reward, { to: reward.distributor, data }) };
  }
  return {
    voucher: { ...voucher, amount: voucher.amount.toString(), deadline: voucher.deadline.toString() },
    signature,
    contract: { address: reward.distributor, chainId: reward.chainId },
    transaction: { to: reward.distributor, data, chainId: reward.chainId },
  };
}

/**
 * Sends the claim from the network's relayer through its one entry
 * (`relayContractCall`: simulated first, so a claim that would revert is never
 * sent), charged to the reward's partner as a `reward` relay: reward claims count
 * against the same per-partner daily quota and gas budget as gasless payments, and
 * one reward is relayed at most as often as one checkout (issue 24).
 */
async function relayClaim(context: AppContext, relayer: Relayer, reward: Reward, call: RelayedCall): Promise<Hex> {
  try {
    const sent = await relayContractCall(context, relayer, { charge: rewardCharge(reward), call });
    return sent.hash;
  } catch (error) {
    if (!(error instanceof RelayFailure)) throw error;
    if (error.code === "relayer_out_of_funds") throw problem("relayer_out_of_funds", error.message);
    throw problem(
      "relay_failed",
      error.code === "authorization_rejected_on_chain"
        ? `The distributor refuses this claim: ${error.message.replace(/^The token refuses this authorization: /, "")}`
        : error.message,
    );
  }
}

const rewardCharge = (reward: Reward): RelayCharge => ({
  partnerId: reward.partnerId,
  chainId: reward.chainId,
  purpose: "reward",
  subjectId: reward.id,
});
