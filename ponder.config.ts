import { createConfig } from "ponder";
import { erc20Abi } from "viem";
import { loadRuntime } from "./api/load-runtime";
import { certificateNftAbi, rewardDistributorAbi, subscriptionManagerAbi } from "./contracts/generated";

/**
 * What the indexer watches: on every enabled network, canonical-USDC `Transfer`
 * logs whose recipient or sender is one of our payment addresses (the environment's and the
 * store's), and the events of the certificate contract, the reward distributor and the
 * subscription manager. The whole configuration is validated here, before Ponder opens
 * its database or starts indexing, and handed to the API entry of the same process. Everything else about a payment is
 * decided outside `src/`.
 */
const {
  indexerCacheEnabled,
  indexerTransport,
  pgliteIndexDirectory,
  ponderListenAddress,
  prepareStart,
  refuseTakenPort,
  rememberStartedConfig,
  roleOfPonderCommand,
  schemaOfPonderCommand,
} = await loadRuntime();
// A fleet's process must not answer on another port than the one it was given (see
// refuseTakenPort). `ponder dev` is left alone: it evaluates this file again on every
// change while its own server holds the port.
const ponderCommand = process.argv.slice(2).find((arg) => !arg.startsWith("-"));
if (ponderCommand === "start" || ponderCommand === "serve") {
  await refuseTakenPort(ponderListenAddress(process.argv, process.env));
}
const config = await prepareStart(process.env, roleOfPonderCommand(process.argv), {
  indexSchema: schemaOfPonderCommand(process.argv),
});
rememberStartedConfig(config);
const { networks } = config;

const chains = Object.fromEntries(
  networks.map((network) => [
    network.name,
    {
      id: network.chainId,
      // Waits out a node that stops answering instead of letting Ponder throttle itself
      // into a backlog it never leaves (see api/indexed/indexer-transport.ts).
      // INDEXER_RPC_TRANSPORT=ponder hands Ponder the bare URL (its own transport): an
      // escape hatch, and how the tests show the watchdog recovering the original stall.
      rpc:
        /^https?:\/\//.test(network.rpcUrl) && config.indexerTransport !== "ponder"
          ? indexerTransport(network.rpcUrl)
          : network.rpcUrl,
      pollingInterval: network.pollingIntervalMs,
      // New blocks pushed by `eth_subscribe("newHeads")` rather than found by polling:
      // up to a polling interval sooner (Ponder polls again if the socket keeps failing).
      ws: network.wsUrl,
      // Ponder's RPC cache (`ponder_sync`) lets a restart resume without fetching again the
      // range it had indexed (issue 30); checked against the node's chain before every start
      // (api/indexed/sync-cache-guard.ts). See indexerCacheEnabled for where it stays off.
      disableCache: !indexerCacheEnabled(network, config),
    },
  ]),
);

// Money in (to a payment address) and money out (refunds, and whatever else the
// partner's wallet sends): the books need both directions. Ponder 0.16 keeps one
// filter per event of a contract (a second filter on `Transfer` replaces the first),
// so money out is a second contract on the same token; a transfer between two payment
// addresses matches both and is stored once.
const usdcTransfers = (direction: "to" | "from") =>
  Object.fromEntries(
    networks.map((network) => [
      network.name,
      {
        address: network.usdc,
        startBlock: network.startBlock,
        filter: { event: "Transfer" as const, args: { [direction]: network.paymentAddresses } },
      },
    ]),
  );

const certificateByChain = Object.fromEntries(
  networks
    .filter((network) => network.certificate !== undefined)
    .map((network) => [network.name, { address: network.certificate, startBlock: network.startBlock }]),
);

const rewardDistributorByChain = Object.fromEntries(
  networks
    .filter((network) => network.rewardDistributor !== undefined)
    .map((network) => [network.name, { address: network.rewardDistributor, startBlock: network.startBlock }]),
);

const subscriptionManagerByChain = Object.fromEntries(
  networks
    .filter((network) => network.subscriptionManager !== undefined)
    .map((network) => [network.name, { address: network.subscriptionManager, startBlock: network.startBlock }]),
);

export default createConfig({
  database:
    config.databaseUrl !== undefined
      ? { kind: "postgres", connectionString: config.databaseUrl }
      : { kind: "pglite", directory: pgliteIndexDirectory(config) },
  chains,
  contracts: {
    USDC: { abi: erc20Abi, chain: usdcTransfers("to") },
    USDCOut: { abi: erc20Abi, chain: usdcTransfers("from") },
    Certificate: { abi: certificateNftAbi, chain: certificateByChain },
    RewardDistributor: { abi: rewardDistributorAbi, chain: rewardDistributorByChain },
    SubscriptionManager: { abi: subscriptionManagerAbi, chain: subscriptionManagerByChain },
  },
});
