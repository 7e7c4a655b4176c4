import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, type Hex, isAddress } from "viem";
import { z } from "zod";
import { NETWORK_NAMES } from "./variables.js";

/**
 * Networks the service can settle on (docs/configuration.md). This module is read by
 * `ponder.config.ts` (what to index) and by the API (what to settle) through
 * `config.ts`, so both always agree on tokens, recipients and confirmation depth.
 */
export { NETWORK_NAMES };
export type NetworkName = (typeof NETWORK_NAMES)[number];

export const KNOWN_NETWORKS: Record<NetworkName, { chainId: number; canonicalUsdc?: Address; defaultConfirmations: number }> = {
  // Base blocks come every 2 s from a single sequencer; 10 blocks (~20 s) keeps a
  // sequencer-side reorg from un-settling an order. See README "Confirmations".
  base: { chainId: 8453, canonicalUsdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", defaultConfirmations: 10 },
  "base-sepolia": {
    chainId: 84532,
    canonicalUsdc: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    defaultConfirmations: 3,
  },
  local: { chainId: 31337, defaultConfirmations: 1 },
};

export type NetworkConfig = {
  name: NetworkName;
  chainId: number;
  rpcUrl: string;
  usdc: Address;
  certificate: Address | undefined;
  /** The reward distributor (`<NET>_REWARD_DISTRIBUTOR_ADDRESS`); none: rewards are off on this network. */
  rewardDistributor: Address | undefined;
  /** The subscription manager (`<NET>_SUBSCRIPTION_MANAGER_ADDRESS`); none: subscriptions are off on this network. */
  subscriptionManager: Address | undefined;
  /** Recipients whose incoming USDC transfers are indexed. */
  paymentAddresses: Address[];
  startBlock: number;
  /** A transfer settles once its block has this many confirmations (1 = the block itself). */
  confirmations: number;
  /** Ponder's polling interval for new blocks, in ms (used when there is no WebSocket). */
  pollingIntervalMs: number;
  /** A `ws://`/`wss://` endpoint: Ponder hears of new blocks by `eth_subscribe` instead of polling. */
  wsUrl: string | undefined;
  /** Key of the relayer that submits EIP-3009 authorizations (`<NET>_RELAYER_KEY_FILE`); none: gasless payment is off. */
  relayerPrivateKey: Hex | undefined;
};

/** What the local deploy script writes to `<dataDir>/deployments/<chainId>.json`. */
export const localDeploymentSchema = z.object({
  chainId: z.number().int(),
  rpcUrl: z.string().url(),
  usdc: z.string().refine(isAddress),
  certificate: z.string().refine(isAddress),
  /** Absent in a data directory deployed before rewards existed: `npm start` then deploys it. */
  rewardDistributor: z.string().refine(isAddress).optional(),
  /** Absent in a data directory deployed before subscriptions existed: `npm start` then deploys it. */
  subscriptionManager: z.string().refine(isAddress).optional(),
  voucherSigner: z.string().refine(isAddress),
  deployBlock: z.number().int().nonnegative(),
  paymentAddresses: z.array(z.string().refine(isAddress)).min(1),
});
export type LocalDeployment = z.infer<typeof localDeploymentSchema>;

export function localDeploymentPath(dataDir: string, chainId = KNOWN_NETWORKS.local.chainId): string {
  return join(dataDir, "deployments", `${chainId}.json`);
}

export function readLocalDeployment(dataDir: string): LocalDeployment | undefined {
  const path = localDeploymentPath(dataDir);
  if (!existsSync(path)) return undefined;
  return localDeploymentSchema.parse(JSON.parse(readFileSync(path, "utf8")));
}

/** `base-sepolia` reads `BASE_SEPOLIA_RPC_URL`, `BASE_SEPOLIA_PAYMENT_ADDRESSES`, ... */
export function envPrefix(name: NetworkName): string {
  return `${name.toUpperCase().replaceAll("-", "_")}_`;
}
