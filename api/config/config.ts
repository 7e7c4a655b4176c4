import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, getAddress, type Hex } from "viem";
import type { z } from "zod";

import {
  envPrefix,
  KNOWN_NETWORKS,
  localDeploymentPath,
  type NetworkConfig,
  type NetworkName,
  readLocalDeployment,
} from "./networks.js";
import type { DispatcherOptions, PortalSettings, RelayLimits, RequestLimits, WatchdogSettings } from "./option-types.js";
import { NETWORK_NAMES, NETWORK_VARIABLES, type NetworkVariable, SERVICE_VARIABLES, type ServiceVariable } from "./variables.js";

/**
 * The whole configuration of one process, read from the environment once at start
 * and passed on through the app context: no module reads the environment after this.
 */
export type ServiceConfig = {
  networks: NetworkConfig[];
  dataDir: string;
  /** Ponder's index on Postgres; undefined: embedded PGlite in `<dataDir>/ponder`. */
  databaseUrl: string | undefined;
  databaseSchema: string;
  /**
   * The schema whose indexer start is recorded for this process: the build schema behind a
   * views schema an API replica reads (`ponder serve --schema <views>`), else `databaseSchema`.
   */
  recordedIndexSchema?: string;
  storeUrl: string | undefined;
  /** Connections per process to a Postgres store (`STORE_POOL_SIZE`). */
  storePoolSize: number;
  workers: boolean;
  /** How long workers get to finish on shutdown (`WORKERS_STOP_GRACE_MS`). */
  workersStopGraceMs: number;
  /** Between two ticks of a worker the index wakes, while its notifications arrive (`WORKER_SAFETY_POLL_MS`). */
  workerSafetyPollMs: number;
  localMode: boolean;
  /** `EMBEDDED_TRIAL=true`: a production network on the embedded index and store, for a trial on one machine. */
  embeddedTrial: boolean;
  publicBaseUrl: string | undefined;
  adminAddresses: Address[];
  voucherPrivateKey: Hex | undefined;
  /** The 32-byte key of the webhook secret box; in local mode without a file, generated at `secretsKeyPath`. */
  secretsKey: Buffer | undefined;
  secretsKeyPath: string | undefined;
  /** Gasless relayer keys by network name (`<NET>_RELAYER_KEY_FILE`). */
  relayerKeys: Partial<Record<NetworkName, Hex>>;
  dispatcher: DispatcherOptions;
  portal: PortalSettings;
  requestLimits: RequestLimits;
  watchdog: WatchdogSettings;
  /** `ponder`: hand Ponder the bare RPC URL instead of the bounded indexer transport. */
  indexerTransport: "bounded" | "ponder";
  /** The API server's port (`PORT`, Ponder's own flag wins), for the watchdog's readiness probe. */
  port: string | undefined;
  relayerReplaceAfterMs: number;
  relayerLowBalanceWei: bigint;
  relayLimits: RelayLimits;
};

export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(readonly problems: string[]) {
    super(
      `The configuration has ${problems.length} problem${problems.length === 1 ? "" : "s"} (see docs/configuration.md):\n  - ${problems.join("\n  - ")}`,
    );
  }
}

const KEY_PATTERN = /^(0x)?[0-9a-fA-F]{64}$/;

/**
 * Reads a key file in the one format every key file has: 64 hex digits, with or
 * without `0x`, surrounding whitespace ignored. Returns the key or a problem.
 */
export function readKeyFile(variable: string, path: string): { key: Hex } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { problem: `${variable}: cannot read ${path} (${code === "ENOENT" ? "no such file" : (code ?? String(error))})` };
  }
  if (!KEY_PATTERN.test(text)) {
    return { problem: `${variable}: ${path} must hold 64 hex digits (32 bytes), with or without 0x` };
  }
  return { key: `0x${text.replace(/^0x/, "").toLowerCase()}` as Hex };
}

const isSet = (raw: string | undefined): raw is string => raw !== undefined && raw.trim() !== "";

type Parsed<names extends string> = Partial<Record<names, unknown>>;

function parseVariables<names extends string>(
  declarations: Record<names, { schema: z.ZodType; sensitive?: true }>,
  read: (name: names) => string | undefined,
  label: (name: names) => string,
  problems: string[],
): Parsed<names> {
  const values: Parsed<names> = {};
  for (const name of Object.keys(declarations) as names[]) {
    const raw = read(name);
    if (!isSet(raw)) continue;
    const result = declarations[name].schema.safeParse(raw.trim());
    if (result.success) values[name] = result.data;
    else {
      const reasons = result.error.issues.map((issue) => issue.message).join("; ");
      problems.push(`${label(name)}: ${reasons}${declarations[name].sensitive ? "" : ` (got "${raw}")`}`);
    }
  }
  return values;
}

/**
 * Validates the environment against `variables.ts` without touching the network or
 * the store, and lists every problem at once. Payment addresses here are those of
 * the environment; `prepareStart` adds the store's.
 */
export function readConfig(env: NodeJS.ProcessEnv): { config: ServiceConfig; problems: string[] } {
  const problems: string[] = [];
  const read = (name: string) => env[name];
  const service = parseVariables(SERVICE_VARIABLES, read, (name) => name, problems) as {
    [name in ServiceVariable]?: z.output<(typeof SERVICE_VARIABLES)[name]["schema"]>;
  };
  const dataDir = service.DATA_DIR ?? join(process.cwd(), ".data");
  const localMode = service.LOCAL_MODE === "true";
  // Valid names are checked even when NETWORKS also holds an unknown one, so every problem shows at once.
  const networkNames = isSet(env.NETWORKS)
    ? [...new Set(env.NETWORKS.split(",").map((name) => name.trim()))].filter((name): name is NetworkName =>
        (NETWORK_NAMES as readonly string[]).includes(name),
      )
    : (["local"] as NetworkName[]);

  const relayerKeys: Partial<Record<NetworkName, Hex>> = {};
  const networks: NetworkConfig[] = [];
  for (const name of networkNames) {
    const prefix = envPrefix(name);
    const values = parseVariables(
      NETWORK_VARIABLES,
      (variable) => env[prefix + variable],
      (variable) => prefix + variable,
      problems,
    ) as { [variable in NetworkVariable]?: z.output<(typeof NETWORK_VARIABLES)[variable]["schema"]> };
    const known = KNOWN_NETWORKS[name];
    const deployment = name === "local" ? safeLocalDeployment(dataDir, problems) : undefined;
    const rpcUrl = values.RPC_URL ?? deployment?.rpcUrl;
    if (rpcUrl === undefined && !isSet(env[`${prefix}RPC_URL`])) {
      problems.push(
        name === "local"
          ? `No RPC URL for network "local": set ${prefix}RPC_URL or run \`npm start\`, which starts Anvil and writes ${localDeploymentPath(dataDir)}`
          : `No RPC URL for network "${name}": set ${prefix}RPC_URL (an HTTPS endpoint of a ${name} node)`,
      );
    }
    const usdc = values.USDC_ADDRESS ?? deployment?.usdc ?? known.canonicalUsdc;
    if (usdc === undefined) problems.push(`No USDC address for network "${name}": set ${prefix}USDC_ADDRESS`);
    const startBlock = values.START_BLOCK ?? deployment?.deployBlock;
    if (startBlock === undefined && name !== "local" && !isSet(env[`${prefix}START_BLOCK`])) {
      problems.push(
        `No start block for network "${name}": set ${prefix}START_BLOCK to a block shortly before your payment addresses were first used`,
      );
    }
    if (values.RELAYER_KEY_FILE !== undefined) {
      const key = readKeyFile(`${prefix}RELAYER_KEY_FILE`, values.RELAYER_KEY_FILE);
      if ("problem" in key) problems.push(key.problem);
      else relayerKeys[name] = key.key;
    }
    const certificate = values.CERTIFICATE_ADDRESS ?? deployment?.certificate;
    const rewardDistributor = values.REWARD_DISTRIBUTOR_ADDRESS ?? deployment?.rewardDistributor;
    const subscriptionManager = values.SUBSCRIPTION_MANAGER_ADDRESS ?? deployment?.subscriptionManager;
    networks.push({
      name,
      chainId: known.chainId,
      rpcUrl: rpcUrl ?? "",
      usdc: getAddress(usdc ?? "0x0000000000000000000000000000000000000000"),
      certificate: certificate === undefined ? undefined : getAddress(certificate),
      rewardDistributor: rewardDistributor === undefined ? undefined : getAddress(rewardDistributor),
      subscriptionManager: subscriptionManager === undefined ? undefined : getAddress(subscriptionManager),
      paymentAddresses: dedupe([...(values.PAYMENT_ADDRESSES ?? []), ...(deployment?.paymentAddresses ?? [])]),
      startBlock: startBlock ?? 0,
      confirmations: values.CONFIRMATIONS ?? known.defaultConfirmations,
      pollingIntervalMs: values.POLLING_INTERVAL_MS ?? (name === "local" ? 100 : 1_000),
      wsUrl: values.WS_URL,
      relayerPrivateKey: relayerKeys[name],
    });
  }

  if (!localMode && !isSet(env.PUBLIC_BASE_URL)) {
    problems.push(
      "PUBLIC_BASE_URL is not set: the service's public origin (e.g. https://pay.example.com), from which checkout links and the wallet sign-in domain are built",
    );
  }

  let voucherPrivateKey: Hex | undefined;
  if (service.VOUCHER_KEY_FILE !== undefined) {
    const key = readKeyFile("VOUCHER_KEY_FILE", service.VOUCHER_KEY_FILE);
    if ("problem" in key) problems.push(key.problem);
    else voucherPrivateKey = key.key;
  } else if (!isSet(env.VOUCHER_KEY_FILE)) {
    for (const network of networks) {
      if (network.certificate !== undefined && network.name !== "local") {
        problems.push(
          `VOUCHER_KEY_FILE is not set, but ${envPrefix(network.name)}CERTIFICATE_ADDRESS names a certificate contract: without the voucher key no certificate can be claimed`,
        );
      }
      if (network.rewardDistributor !== undefined && network.name !== "local") {
        problems.push(
          `VOUCHER_KEY_FILE is not set, but ${envPrefix(network.name)}REWARD_DISTRIBUTOR_ADDRESS names a reward distributor: without the voucher key no reward can be claimed`,
        );
      }
    }
  }

  let secretsKey: Buffer | undefined;
  let secretsKeyPath: string | undefined;
  if (service.SECRETS_KEY_FILE !== undefined) {
    const key = readKeyFile("SECRETS_KEY_FILE", service.SECRETS_KEY_FILE);
    if ("problem" in key) problems.push(key.problem);
    else secretsKey = Buffer.from(key.key.slice(2), "hex");
    secretsKeyPath = service.SECRETS_KEY_FILE;
  } else if (isSet(env.SECRETS_KEY_FILE)) {
    // malformed: already listed
  } else if (localMode) {
    secretsKeyPath = join(dataDir, "secrets.key");
  } else {
    problems.push(
      "SECRETS_KEY_FILE is not set: it must name a file holding the 32-byte key that encrypts webhook secrets (create one with `npx settlement secrets generate <file>`)",
    );
  }

  const config: ServiceConfig = {
    networks,
    dataDir,
    databaseUrl: service.DATABASE_URL,
    databaseSchema: service.DATABASE_SCHEMA ?? "public",
    storeUrl: service.STORE_URL,
    storePoolSize: service.STORE_POOL_SIZE ?? 10,
    embeddedTrial: service.EMBEDDED_TRIAL === "true",
    workers: service.WORKERS !== "off",
    workersStopGraceMs: service.WORKERS_STOP_GRACE_MS ?? 4_000,
    workerSafetyPollMs: service.WORKER_SAFETY_POLL_MS ?? 1_000,
    localMode,
    publicBaseUrl: service.PUBLIC_BASE_URL?.replace(/\/$/, ""),
    adminAddresses: dedupe(service.ADMIN_ADDRESSES ?? []),
    voucherPrivateKey,
    secretsKey,
    secretsKeyPath,
    relayerKeys,
    dispatcher: {
      retryBaseMs: service.WEBHOOK_RETRY_BASE_MS ?? 10_000,
      retryMaxDelayMs: service.WEBHOOK_RETRY_MAX_DELAY_MS ?? 3_600_000,
      retryWindowMs: service.WEBHOOK_RETRY_WINDOW_MS ?? 3 * 24 * 3_600_000,
      attemptTimeoutMs: service.WEBHOOK_ATTEMPT_TIMEOUT_MS ?? 5_000,
      concurrency: service.WEBHOOK_CONCURRENCY ?? 32,
      perEndpointConcurrency: Math.min(service.WEBHOOK_ENDPOINT_CONCURRENCY ?? 4, service.WEBHOOK_PARTNER_CONCURRENCY ?? 8),
      perPartnerConcurrency: service.WEBHOOK_PARTNER_CONCURRENCY ?? 8,
      pollIntervalMs: 100,
    },
    portal: {
      challengeTtlSeconds: service.SIWE_CHALLENGE_TTL_SECONDS ?? 300,
      sessionTtlSeconds: service.PORTAL_SESSION_TTL_SECONDS ?? 8 * 3600,
      verifyRateLimit: {
        limit: service.VERIFY_RATE_LIMIT ?? 60,
        windowMs: (service.VERIFY_RATE_WINDOW_SECONDS ?? 60) * 1000,
      },
      reservationSeconds: service.RWA_RESERVATION_SECONDS ?? 1800,
      releaseGraceMs: (service.RWA_RELEASE_GRACE_SECONDS ?? 600) * 1000,
      trustProxy: service.TRUST_PROXY === "true",
    },
    requestLimits: {
      bodyBytes: service.BODY_LIMIT_BYTES ?? 1024 * 1024,
      publicBodyBytes: Math.min(service.PUBLIC_BODY_LIMIT_BYTES ?? 16 * 1024, service.BODY_LIMIT_BYTES ?? 1024 * 1024),
      signIn: { limit: service.SIGN_IN_RATE_LIMIT ?? 120, windowMs: (service.RATE_LIMIT_WINDOW_SECONDS ?? 60) * 1000 },
      lookups: { limit: service.LOOKUP_RATE_LIMIT ?? 120, windowMs: (service.RATE_LIMIT_WINDOW_SECONDS ?? 60) * 1000 },
      publicCalls: { limit: service.PUBLIC_RATE_LIMIT ?? 1200, windowMs: (service.RATE_LIMIT_WINDOW_SECONDS ?? 60) * 1000 },
      trustProxy: service.TRUST_PROXY === "true",
    },
    watchdog: {
      stallTimeoutMs: service.INDEXER_STALL_TIMEOUT_MS ?? 120_000,
      restartOnStall: service.INDEXER_STALL_RESTART !== "false",
      sampleIntervalMs: 1_000,
      probeTimeoutMs: 2_000,
      restartDelayMs: 5_000,
    },
    indexerTransport: service.INDEXER_RPC_TRANSPORT ?? "bounded",
    port: isSet(env.PORT) ? env.PORT : undefined,
    relayerReplaceAfterMs: (service.RELAYER_REPLACE_AFTER_SECONDS ?? 30) * 1000,
    // 0.002 ETH: some 400 relayed payments on Base at its usual fees.
    relayerLowBalanceWei: BigInt(service.RELAYER_LOW_BALANCE_WEI ?? "2000000000000000"),
    relayLimits: {
      minAmount: BigInt(service.RELAYER_MIN_AMOUNT ?? "100000"),
      partnerDailyRelays: service.RELAYER_PARTNER_DAILY_RELAYS ?? 2000,
      sessionRelays: service.RELAYER_SESSION_RELAYS ?? 3,
      // 0.05 ETH: some 10,000 relayed payments a day on Base at its usual fees.
      partnerDailyGasWei: BigInt(service.RELAYER_PARTNER_DAILY_GAS_WEI ?? "50000000000000000"),
      balanceFloorWei: BigInt(service.RELAYER_BALANCE_FLOOR_WEI ?? "200000000000000"),
    },
  };
  return { config, problems };
}

/** `readConfig`, throwing one `ConfigError` that lists every problem. */
export function loadConfig(env: NodeJS.ProcessEnv): ServiceConfig {
  const { config, problems } = readConfig(env);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

function safeLocalDeployment(dataDir: string, problems: string[]) {
  try {
    return readLocalDeployment(dataDir);
  } catch (error) {
    problems.push(`${localDeploymentPath(dataDir)} cannot be read: ${String(error)}`);
    return undefined;
  }
}

function dedupe(addresses: string[]): Address[] {
  const seen = new Map<string, Address>();
  for (const address of addresses) seen.set(address.toLowerCase(), getAddress(address));
  return [...seen.values()];
}

/** The networks that take real money: a service naming one runs the production profile (docs/deploy.md). */
const PRODUCTION_NETWORKS: readonly NetworkName[] = ["base", "base-sepolia"];

/**
 * The production profile (SPEC 10): outside local mode, a service on Base or Base Sepolia keeps
 * its index (DATABASE_URL) and its store (STORE_URL) on Postgres servers, unless the operator
 * says `EMBEDDED_TRIAL=true` for a trial on one machine. Each refusal names what to set.
 */
export function productionProfileProblems(
  config: Pick<ServiceConfig, "networks" | "localMode" | "databaseUrl" | "storeUrl" | "embeddedTrial">,
): string[] {
  const production = config.networks.filter((network) => PRODUCTION_NETWORKS.includes(network.name));
  if (config.localMode || production.length === 0 || config.embeddedTrial) return [];
  const named = production.map((network) => network.name).join(" and ");
  const problems: string[] = [];
  if (config.databaseUrl === undefined) {
    problems.push(
      `DATABASE_URL is not set: on ${named} the index lives on a Postgres server (postgres://…); Ponder's embedded PGlite is for local development only. For a trial on one machine, set EMBEDDED_TRIAL=true`,
    );
  }
  if (config.storeUrl === undefined || config.storeUrl.startsWith("pglite:")) {
    problems.push(
      `STORE_URL ${config.storeUrl === undefined ? "is not set" : "names an embedded pglite: store"}: on ${named} the service's own state lives on a Postgres server (postgres://…) that every process of the fleet shares. For a trial on one machine, set EMBEDDED_TRIAL=true`,
    );
  }
  return problems;
}
