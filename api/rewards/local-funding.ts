import { createWalletClient, defineChain, erc20Abi, type Hex, http, isAddressEqual } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import type { AppContext } from "../app-context.js";
import { ANVIL_MNEMONIC, isAnvilNode } from "../config/anvil-node.js";
import { ProblemError, problem } from "../http/problem.js";
import { issueFundingChallenge } from "./funding-proof.js";
import { writeRewardSettings } from "./reward-settings-view.js";

/**
 * The Anvil account local mode funds rewards from: the one `npm run simulate -- reward`
 * uses (local/simulate.ts), which the local chain gives ETH and test USDC. Its key is
 * Anvil's public mnemonic, so only an Anvil node ever sees it used.
 */
export const LOCAL_REWARD_FUNDER_INDEX = 5;

/** One approval at a time per process: two clicks would otherwise race on the account's nonce. */
let queue: Promise<unknown> = Promise.resolve();

const localModeOnly = (detail: string) =>
  new ProblemError({
    code: "local_mode_only",
    detail: `${detail} Prove a funding address and approve the distributor from its own wallet instead.`,
  });

/**
 * The console's "Approve with the test account" (docs/rewards.md, "Local mode"): makes the
 * local funder the partner's funding address, proving it exactly as any wallet does (the
 * service's challenge, signed with the account's key, checked by the same code), then
 * approves the distributor for `allowance` from it and reads the settings afresh. In local
 * mode on an Anvil node only: anywhere else the service holds no key that may move money.
 */
export async function fundRewardsWithTestAccount(context: AppContext, params: { partnerId: string; allowance: bigint }) {
  if (!context.settings.localMode) throw localModeOnly("Funding rewards with the test account exists in local mode only.");
  const network = context.networks.find((candidate) => candidate.rewardDistributor !== undefined);
  const distributor = network?.rewardDistributor;
  if (network === undefined || distributor === undefined) {
    throw problem("rewards_unavailable", "No network of this service has a reward distributor.");
  }
  const client = context.rpc.get(network.chainId);
  if (client === undefined || !(await isAnvilNode(context, network.chainId))) {
    throw localModeOnly("The rewards network's node is not a local Anvil.");
  }
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: LOCAL_REWARD_FUNDER_INDEX });
  const current = await writeRewardSettings(context, { partnerId: params.partnerId });
  if (
    !(current.fundingProven && current.fundingAddress !== null && isAddressEqual(current.fundingAddress as Hex, account.address))
  ) {
    const challenge = await issueFundingChallenge(context, { partnerId: params.partnerId, fundingAddress: account.address });
    const signature = await account.signMessage({ message: challenge.message });
    await writeRewardSettings(context, {
      partnerId: params.partnerId,
      fundingAddress: account.address,
      fundingProof: { message: challenge.message, signature },
    });
  }
  const wallet = createWalletClient({
    account,
    chain: defineChain({
      id: network.chainId,
      name: network.name,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [network.rpcUrl] } },
    }),
    transport: http(network.rpcUrl),
  });
  const approve = async () => {
    const hash = await wallet.writeContract({
      address: network.usdc,
      abi: erc20Abi,
      functionName: "approve",
      args: [distributor, params.allowance],
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    if (receipt.status !== "success") throw new Error(`the approval ${hash} reverted`);
    return hash;
  };
  const sent = queue.then(approve, approve);
  queue = sent.catch(() => undefined);
  const transactionHash = await sent;
  // A settings write forgets the cached allowance, so the answer shows the approval just mined.
  return { transactionHash, settings: await writeRewardSettings(context, { partnerId: params.partnerId }) };
}
