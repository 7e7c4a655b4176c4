import { problem } from "../http/problem.js";
import type { NetworkConfig } from "./networks.js";

/** The networks this process settles on (`NETWORKS`), as the app context carries them. */
type EnabledNetworks = { networks: readonly NetworkConfig[] };

/** The enabled network of that name, or the `unsupported_network` problem naming those there are. */
export function enabledNetwork(context: EnabledNetworks, name: string): NetworkConfig {
  const network = context.networks.find((candidate) => candidate.name === name);
  if (network === undefined) {
    throw problem("unsupported_network", `Enabled networks: ${context.networks.map((candidate) => candidate.name).join(", ")}.`);
  }
  return network;
}

/** The enabled network with that chain id, if any. */
export function networkByChainId(context: EnabledNetworks, chainId: number): NetworkConfig | undefined {
  return context.networks.find((network) => network.chainId === chainId);
}
