import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readKeyFile } from "../api/config/config.js";
import { envPrefix, KNOWN_NETWORKS, NETWORK_NAMES, type NetworkName } from "../api/config/networks.js";
import { redactUrl } from "../api/logging/redact.js";
import { deployCertificate, deployRewardDistributor, deploySubscriptionManager } from "../local/deploy.js";
import { type CommandContext, type CommandResult, UsageError } from "./command-kit.js";

/**
 * `settlement contracts deploy --network <name> --deployer-key-file <file>`: deploys
 * the certificate contract and the reward distributor on a network the service is
 * configured for (`<NET>_RPC_URL`), both trusting the service's voucher key
 * (`VOUCHER_KEY_FILE`), and the subscription manager (which trusts no key), and
 * prints the variables that point the service at them.
 * The deployer key pays the gas and becomes the contracts' owner; it is not the
 * voucher key and the service never needs it afterwards (docs/deploy.md).
 */
export async function deployServiceContracts(context: CommandContext): Promise<CommandResult> {
  const name = context.options.network;
  if (typeof name !== "string" || !(NETWORK_NAMES as readonly string[]).includes(name))
    throw new UsageError(`--network must be one of ${NETWORK_NAMES.join(", ")}.`);
  const network = name as NetworkName;
  const keyFile = context.options["deployer-key-file"];
  if (typeof keyFile !== "string") throw new UsageError("--deployer-key-file is required (64 hex digits; it pays the gas).");
  const prefix = envPrefix(network);
  const rpcUrl = context.env[`${prefix}RPC_URL`];
  if (rpcUrl === undefined || rpcUrl.trim() === "")
    throw new UsageError(`${prefix}RPC_URL is required: the node to deploy through.`);
  const voucherKeyPath = context.env.VOUCHER_KEY_FILE;
  if (voucherKeyPath === undefined)
    throw new UsageError("VOUCHER_KEY_FILE is required: the contracts accept vouchers signed by it.");
  const deployer = readKeyFile("--deployer-key-file", keyFile);
  const voucher = readKeyFile("VOUCHER_KEY_FILE", voucherKeyPath);
  if ("problem" in deployer) throw new UsageError(deployer.problem);
  if ("problem" in voucher) throw new UsageError(voucher.problem);

  const chainId = KNOWN_NETWORKS[network].chainId;
  const node = createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }) });
  const nodeChainId = await node.getChainId().catch((error: Error) => {
    throw new Error(`${redactUrl(rpcUrl)} did not answer eth_chainId: ${error.message.split("\n")[0]}`);
  });
  if (nodeChainId !== chainId)
    throw new Error(`${redactUrl(rpcUrl)} is chain ${nodeChainId}, not ${network} (${chainId}); nothing was deployed.`);
  const deployerAddress = privateKeyToAccount(deployer.key).address;
  if ((await node.getBalance({ address: deployerAddress })) === 0n)
    throw new Error(`The deployer ${deployerAddress} holds no ETH on ${network} to pay the gas; nothing was deployed.`);

  const voucherSigner = privateKeyToAccount(voucher.key).address;
  const params = { rpcUrl, chainId, deployerPrivateKey: deployer.key, voucherSigner };
  const { certificate, deployBlock } = await deployCertificate(params);
  const { rewardDistributor } = await deployRewardDistributor(params);
  const { subscriptionManager } = await deploySubscriptionManager(params);
  const variables = {
    [`${prefix}CERTIFICATE_ADDRESS`]: certificate,
    [`${prefix}REWARD_DISTRIBUTOR_ADDRESS`]: rewardDistributor,
    [`${prefix}SUBSCRIPTION_MANAGER_ADDRESS`]: subscriptionManager,
  };
  return {
    text: [
      `Deployed on ${network} (chain ${chainId}) from ${deployerAddress}, vouchers signed by ${voucherSigner}:`,
      `  CertificateNFT      ${certificate} (block ${deployBlock})`,
      `  RewardDistributor   ${rewardDistributor}`,
      `  SubscriptionManager ${subscriptionManager}`,
      "Add to the service's environment, then restart it:",
      ...Object.entries(variables).map(([variable, value]) => `  ${variable}=${value}`),
    ].join("\n"),
    json: {
      network,
      chainId,
      deployer: deployerAddress,
      voucherSigner,
      certificate,
      rewardDistributor,
      subscriptionManager,
      deployBlock,
      variables,
    },
  };
}
