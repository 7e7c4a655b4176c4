import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, getAddress, type Hex, isAddress } from "viem";
import { z } from "zod";

/**
 * Networks the service can settle on (SPEC section 2). This module is read by
 * `ponder.config.ts` (what to index) and by the API (what to settle), so both
 * always agree on tokens, recipients and confirmation depth.
 */
export const NETWORK_NAMES = ["base", "base-sepolia", "local"] as const;
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
  voucherSigner: z.string().refine(isAddress),
  deployBlock: z.number().int().nonnegative(),
  paymentAddresses: z.array(z.string().refine(isAddress)).min(1),
});
export type LocalDeployment = z.infer<typeof localDeploymentSchema>;

export function dataDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return env.DATA_DIR ?? join(process.cwd(), ".data");
}

export function localDeploymentPath(dataDir: string, chainId = KNOWN_NETWORKS.local.chainId): string {
  return join(dataDir, "deployments", `${chainId}.json`);
}

export function readLocalDeployment(dataDir: string): LocalDeployment | undefined {
  const path = localDeploymentPath(dataDir);
  if (!existsSync(path)) return undefined;
  return localDeploymentSchema.parse(JSON.parse(readFileSync(path, "utf8")));
}

const addressList = z
  .string()
  .transform((value) =>
    value
      .split(",")
      .map((item) => item.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string().refine(isAddress, { message: "not an address" })));

const networkEnvSchema = z.object({
  RPC_URL: z.string().url().optional(),
  WS_URL: z
    .string()
    .url()
    .refine((value) => /^wss?:\/\//.test(value), { message: "not a ws:// or wss:// URL" })
    .optional(),
  USDC_ADDRESS: z.string().refine(isAddress, { message: "not an address" }).optional(),
  CERTIFICATE_ADDRESS: z.string().refine(isAddress, { message: "not an address" }).optional(),
  PAYMENT_ADDRESSES: addressList.optional(),
  START_BLOCK: z.coerce.number().int().nonnegative().optional(),
  CONFIRMATIONS: z.coerce.number().int().min(1).max(1000).optional(),
  // Ponder refuses a polling interval under 100 ms; say so here, at start, with the variable's name.
  POLLING_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).optional(),
  RELAYER_KEY_FILE: z.string().optional(),
});

export class NetworkConfigError extends Error {
  override name = "NetworkConfigError";
}

/** `base-sepolia` reads `BASE_SEPOLIA_RPC_URL`, `BASE_SEPOLIA_PAYMENT_ADDRESSES`, ... */
export function envPrefix(name: NetworkName): string {
  return `${name.toUpperCase().replaceAll("-", "_")}_`;
}

function readNetworkEnv(name: NetworkName, env: NodeJS.ProcessEnv) {
  const prefix = envPrefix(name);
  const raw = Object.fromEntries(
    Object.keys(networkEnvSchema.shape).map((key) => [key, env[prefix + key] === "" ? undefined : env[prefix + key]]),
  );
  const parsed = networkEnvSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${prefix}${issue.path.join(".")}: ${issue.message}`);
    throw new NetworkConfigError(`Invalid configuration for network "${name}":\n  ${problems.join("\n  ")}`);
  }
  return parsed.data;
}

/**
 * Validates the environment once at start. `NETWORKS` lists the enabled networks
 * (default `local`); each needs an RPC URL and at least one payment address, and
 * `local` falls back to the deployment file the local stack writes.
 */
export function loadNetworks(env: NodeJS.ProcessEnv = process.env): NetworkConfig[] {
  const names = (env.NETWORKS ?? "local")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  if (names.length === 0) throw new NetworkConfigError("NETWORKS is empty: name at least one of base, base-sepolia, local");

  return names.map((name) => {
    if (!(NETWORK_NAMES as readonly string[]).includes(name)) {
      throw new NetworkConfigError(`NETWORKS names "${name}", which is not one of ${NETWORK_NAMES.join(", ")}`);
    }
    const network = name as NetworkName;
    const known = KNOWN_NETWORKS[network];
    const values = readNetworkEnv(network, env);
    const prefix = envPrefix(network);
    const deployment = network === "local" ? readLocalDeployment(dataDirectory(env)) : undefined;

    const rpcUrl = values.RPC_URL ?? deployment?.rpcUrl;
    if (rpcUrl === undefined) {
      throw new NetworkConfigError(
        network === "local"
          ? `No RPC URL for network "local": set ${prefix}RPC_URL or run \`npm start\`, which starts Anvil and writes ${localDeploymentPath(dataDirectory(env))}`
          : `No RPC URL for network "${network}": set ${prefix}RPC_URL (an HTTPS endpoint of a ${network} node)`,
      );
    }
    const usdc = values.USDC_ADDRESS ?? deployment?.usdc ?? known.canonicalUsdc;
    if (usdc === undefined) throw new NetworkConfigError(`No USDC address for network "${network}": set ${prefix}USDC_ADDRESS`);
    const paymentAddresses = values.PAYMENT_ADDRESSES ?? deployment?.paymentAddresses ?? [];
    if (paymentAddresses.length === 0) {
      throw new NetworkConfigError(
        `No payment address for network "${network}": set ${prefix}PAYMENT_ADDRESSES (comma-separated)`,
      );
    }
    const startBlock = values.START_BLOCK ?? deployment?.deployBlock;
    if (startBlock === undefined && network !== "local") {
      throw new NetworkConfigError(
        `No start block for network "${network}": set ${prefix}START_BLOCK to a block shortly before your payment addresses were first used`,
      );
    }
    const certificate = values.CERTIFICATE_ADDRESS ?? deployment?.certificate;
    return {
      name: network,
      chainId: known.chainId,
      rpcUrl,
      usdc: getAddress(usdc),
      certificate: certificate === undefined ? undefined : getAddress(certificate),
      paymentAddresses: paymentAddresses.map((address) => getAddress(address)),
      startBlock: startBlock ?? 0,
      confirmations: values.CONFIRMATIONS ?? known.defaultConfirmations,
      pollingIntervalMs: values.POLLING_INTERVAL_MS ?? (network === "local" ? 100 : 1_000),
      wsUrl: values.WS_URL,
      relayerPrivateKey:
        values.RELAYER_KEY_FILE === undefined ? undefined : readKeyFile(`${prefix}RELAYER_KEY_FILE`, values.RELAYER_KEY_FILE),
    };
  });
}

/** A key file holds 64 hex digits, with or without `0x` (and maybe a trailing newline). */
export function readKeyFile(variable: string, path: string): Hex {
  let text: string;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (error) {
    throw new NetworkConfigError(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const hex = text.startsWith("0x") || text.startsWith("0X") ? text.slice(2) : text;
  if (!/^[0-9a-fA-F]{64}$/.test(hex))
    throw new NetworkConfigError(`${variable}: ${path} must hold 64 hex digits, with or without 0x`);
  return `0x${hex.toLowerCase()}`;
}
