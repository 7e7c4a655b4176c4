import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, readConfig, readKeyFile, type ServiceConfig } from "../../api/config/config.js";
import {
  envPrefix,
  KNOWN_NETWORKS,
  localDeploymentPath,
  type NetworkName,
  readLocalDeployment,
} from "../../api/config/networks.js";
import { settingsOf } from "../../api/config/settings.js";
import { NETWORK_NAMES, NETWORK_VARIABLES, SERVICE_VARIABLES } from "../../api/config/variables.js";

// Issue 25: the configuration rules as functions over an env object, without the
// Anvil of test/operator-config.test.ts (which keeps the chain-id check and the CLI).
let directory: string;
const KEY = "ab".repeat(32);
const ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const OTHER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

function file(name: string, content: string): string {
  const path = join(directory, name);
  writeFileSync(path, content);
  return path;
}

/** A complete Base configuration with every optional variable unset; a test changes what it is about. */
function baseEnv(overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    NETWORKS: "base",
    BASE_RPC_URL: "https://base.example",
    BASE_START_BLOCK: "1",
    PUBLIC_BASE_URL: "https://pay.example.com",
    SECRETS_KEY_FILE: join(directory, "secrets.key"),
    DATA_DIR: join(directory, "data"),
    ...overrides,
  };
}

function valid(env: NodeJS.ProcessEnv): ServiceConfig {
  const { config, problems } = readConfig(env);
  expect(problems).toEqual([]);
  return config;
}

/** Follows a dotted path (`dispatcher.retryBaseMs`, `networks.0.confirmations`) into the configuration. */
function at(config: ServiceConfig, path: string): unknown {
  return path.split(".").reduce<unknown>((value, key) => (value as Record<string, unknown>)[key], config);
}

/** A data directory holding what `npm start` writes for the local chain. */
function localDataDir(name: string, deployment: Record<string, unknown>): string {
  const dataDir = join(directory, name);
  mkdirSync(join(dataDir, "deployments"), { recursive: true });
  writeFileSync(localDeploymentPath(dataDir), JSON.stringify(deployment));
  return dataDir;
}

const DEPLOYMENT = {
  chainId: 31337,
  rpcUrl: "http://127.0.0.1:8545",
  usdc: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  certificate: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
  rewardDistributor: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
  subscriptionManager: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
  voucherSigner: ADDRESS,
  deployBlock: 7,
  paymentAddresses: [OTHER],
};

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), "cfg-config-"));
  file("secrets.key", `${KEY}\n`);
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe("readConfig defaults", () => {
  it.each([
    ["databaseUrl", undefined],
    ["databaseSchema", "public"],
    ["storeUrl", undefined],
    ["workers", true],
    ["workersStopGraceMs", 4_000],
    ["workerSafetyPollMs", 1_000],
    ["localMode", false],
    ["adminAddresses", []],
    ["voucherPrivateKey", undefined],
    ["relayerKeys", {}],
    ["dispatcher.retryBaseMs", 10_000],
    ["dispatcher.retryMaxDelayMs", 3_600_000],
    ["dispatcher.retryWindowMs", 259_200_000],
    ["dispatcher.attemptTimeoutMs", 5_000],
    ["dispatcher.concurrency", 32],
    ["dispatcher.perEndpointConcurrency", 4],
    ["dispatcher.perPartnerConcurrency", 8],
    ["portal.challengeTtlSeconds", 300],
    ["portal.sessionTtlSeconds", 28_800],
    ["portal.verifyRateLimit", { limit: 60, windowMs: 60_000 }],
    ["portal.reservationSeconds", 1_800],
    ["portal.releaseGraceMs", 600_000],
    ["portal.trustProxy", false],
    ["requestLimits.bodyBytes", 1_048_576],
    ["requestLimits.publicBodyBytes", 16_384],
    ["requestLimits.signIn", { limit: 120, windowMs: 60_000 }],
    ["requestLimits.lookups", { limit: 120, windowMs: 60_000 }],
    ["requestLimits.publicCalls", { limit: 1_200, windowMs: 60_000 }],
    ["watchdog.stallTimeoutMs", 120_000],
    ["watchdog.restartOnStall", true],
    ["indexerTransport", "bounded"],
    ["port", undefined],
    ["relayerReplaceAfterMs", 30_000],
    ["relayerLowBalanceWei", 2_000_000_000_000_000n],
    ["relayLimits.minAmount", 100_000n],
    ["relayLimits.partnerDailyRelays", 2_000],
    ["relayLimits.sessionRelays", 3],
    ["relayLimits.partnerDailyGasWei", 50_000_000_000_000_000n],
    ["relayLimits.balanceFloorWei", 200_000_000_000_000n],
  ])("%s defaults to %o", (path, expected) => {
    expect(at(valid(baseEnv()), path)).toEqual(expected);
  });

  it("takes the data directory `.data` in the working directory when DATA_DIR is unset", () => {
    expect(valid(baseEnv({ DATA_DIR: undefined })).dataDir).toBe(join(process.cwd(), ".data"));
  });

  it("indexes the local chain when NETWORKS is unset", () => {
    const dataDir = localDataDir("default-network", DEPLOYMENT);
    const config = valid(baseEnv({ NETWORKS: undefined, DATA_DIR: dataDir }));
    expect(config.networks.map((network) => network.name)).toEqual(["local"]);
  });

  it("a Base network gets Circle's USDC, chain 8453, ten confirmations and a 1 s poll", () => {
    expect(valid(baseEnv()).networks).toEqual([
      {
        name: "base",
        chainId: 8453,
        rpcUrl: "https://base.example",
        usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        certificate: undefined,
        rewardDistributor: undefined,
        subscriptionManager: undefined,
        paymentAddresses: [],
        startBlock: 1,
        confirmations: 10,
        pollingIntervalMs: 1_000,
        wsUrl: undefined,
        relayerPrivateKey: undefined,
      },
    ]);
  });

  it("a Base Sepolia network gets its own USDC, chain 84532 and three confirmations", () => {
    const config = valid(
      baseEnv({ NETWORKS: "base-sepolia", BASE_SEPOLIA_RPC_URL: "https://sepolia.example", BASE_SEPOLIA_START_BLOCK: "5" }),
    );
    expect(config.networks[0]).toMatchObject({
      name: "base-sepolia",
      chainId: 84532,
      usdc: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      confirmations: 3,
      startBlock: 5,
    });
  });
});

describe("readConfig overrides", () => {
  it.each([
    ["DATABASE_URL", "postgres://u:p@db/index", "databaseUrl", "postgres://u:p@db/index"],
    ["DATABASE_SCHEMA", "index_v2", "databaseSchema", "index_v2"],
    ["STORE_URL", "pglite:/var/store", "storeUrl", "pglite:/var/store"],
    ["WORKERS", "off", "workers", false],
    ["WORKERS_STOP_GRACE_MS", "0", "workersStopGraceMs", 0],
    ["WORKER_SAFETY_POLL_MS", "600000", "workerSafetyPollMs", 600_000],
    ["WEBHOOK_RETRY_BASE_MS", "250", "dispatcher.retryBaseMs", 250],
    ["WEBHOOK_RETRY_MAX_DELAY_MS", "60000", "dispatcher.retryMaxDelayMs", 60_000],
    ["WEBHOOK_RETRY_WINDOW_MS", "0", "dispatcher.retryWindowMs", 0],
    ["WEBHOOK_ATTEMPT_TIMEOUT_MS", "100", "dispatcher.attemptTimeoutMs", 100],
    ["WEBHOOK_CONCURRENCY", "1000", "dispatcher.concurrency", 1_000],
    ["SIWE_CHALLENGE_TTL_SECONDS", "600", "portal.challengeTtlSeconds", 600],
    ["PORTAL_SESSION_TTL_SECONDS", "60", "portal.sessionTtlSeconds", 60],
    ["RWA_RESERVATION_SECONDS", "5", "portal.reservationSeconds", 5],
    ["RWA_RELEASE_GRACE_SECONDS", "2", "portal.releaseGraceMs", 2_000],
    ["BODY_LIMIT_BYTES", "67108864", "requestLimits.bodyBytes", 67_108_864],
    ["INDEXER_STALL_TIMEOUT_MS", "1000", "watchdog.stallTimeoutMs", 1_000],
    ["INDEXER_STALL_RESTART", "false", "watchdog.restartOnStall", false],
    ["INDEXER_RPC_TRANSPORT", "ponder", "indexerTransport", "ponder"],
    ["PORT", "8080", "port", "8080"],
    ["RELAYER_REPLACE_AFTER_SECONDS", "3600", "relayerReplaceAfterMs", 3_600_000],
    ["RELAYER_LOW_BALANCE_WEI", "123456789012345678901234567890", "relayerLowBalanceWei", 123456789012345678901234567890n],
    ["RELAYER_MIN_AMOUNT", "0", "relayLimits.minAmount", 0n],
    ["RELAYER_PARTNER_DAILY_RELAYS", "0", "relayLimits.partnerDailyRelays", 0],
    ["RELAYER_SESSION_RELAYS", "100", "relayLimits.sessionRelays", 100],
    ["RELAYER_PARTNER_DAILY_GAS_WEI", "1", "relayLimits.partnerDailyGasWei", 1n],
    ["RELAYER_BALANCE_FLOOR_WEI", "0", "relayLimits.balanceFloorWei", 0n],
    ["BASE_CONFIRMATIONS", "1000", "networks.0.confirmations", 1_000],
    ["BASE_POLLING_INTERVAL_MS", "60000", "networks.0.pollingIntervalMs", 60_000],
    ["BASE_WS_URL", "wss://base.example/ws", "networks.0.wsUrl", "wss://base.example/ws"],
    ["BASE_START_BLOCK", "0", "networks.0.startBlock", 0],
  ])("%s=%s sets %s", (name, value, path, expected) => {
    expect(at(valid(baseEnv({ [name]: value })), path)).toEqual(expected);
  });

  it("one window (RATE_LIMIT_WINDOW_SECONDS) serves all three request rate limits, each with its own count", () => {
    const config = valid(
      baseEnv({ RATE_LIMIT_WINDOW_SECONDS: "7", SIGN_IN_RATE_LIMIT: "1", LOOKUP_RATE_LIMIT: "2", PUBLIC_RATE_LIMIT: "3" }),
    );
    expect([config.requestLimits.signIn, config.requestLimits.lookups, config.requestLimits.publicCalls]).toEqual([
      { limit: 1, windowMs: 7_000 },
      { limit: 2, windowMs: 7_000 },
      { limit: 3, windowMs: 7_000 },
    ]);
    // The verification limit has a window of its own.
    expect(config.portal.verifyRateLimit).toEqual({ limit: 60, windowMs: 60_000 });
  });

  it("the certificate verification limit reads VERIFY_RATE_LIMIT per VERIFY_RATE_WINDOW_SECONDS", () => {
    expect(valid(baseEnv({ VERIFY_RATE_LIMIT: "5", VERIFY_RATE_WINDOW_SECONDS: "3600" })).portal.verifyRateLimit).toEqual({
      limit: 5,
      windowMs: 3_600_000,
    });
  });

  it("TRUST_PROXY=true is read by both the portal and the request limits", () => {
    const config = valid(baseEnv({ TRUST_PROXY: "true" }));
    expect([config.portal.trustProxy, config.requestLimits.trustProxy]).toEqual([true, true]);
  });

  it("caps the per-endpoint concurrency at the per-partner one", () => {
    const config = valid(baseEnv({ WEBHOOK_ENDPOINT_CONCURRENCY: "50", WEBHOOK_PARTNER_CONCURRENCY: "6" }));
    expect([config.dispatcher.perEndpointConcurrency, config.dispatcher.perPartnerConcurrency]).toEqual([6, 6]);
    const under = valid(baseEnv({ WEBHOOK_ENDPOINT_CONCURRENCY: "2", WEBHOOK_PARTNER_CONCURRENCY: "6" }));
    expect([under.dispatcher.perEndpointConcurrency, under.dispatcher.perPartnerConcurrency]).toEqual([2, 6]);
  });

  it("caps the public body limit at the body limit", () => {
    const config = valid(baseEnv({ BODY_LIMIT_BYTES: "2048", PUBLIC_BODY_LIMIT_BYTES: "4096" }));
    expect([config.requestLimits.bodyBytes, config.requestLimits.publicBodyBytes]).toEqual([2_048, 2_048]);
    expect(valid(baseEnv({ PUBLIC_BODY_LIMIT_BYTES: "1024" })).requestLimits.publicBodyBytes).toBe(1_024);
  });

  it("drops one trailing slash of PUBLIC_BASE_URL", () => {
    expect(valid(baseEnv({ PUBLIC_BASE_URL: "https://pay.example.com/" })).publicBaseUrl).toBe("https://pay.example.com");
    expect(valid(baseEnv({ PUBLIC_BASE_URL: "https://pay.example.com/checkout" })).publicBaseUrl).toBe(
      "https://pay.example.com/checkout",
    );
  });

  it("checksums and de-duplicates admin and payment addresses, ignoring blanks around commas", () => {
    const config = valid(
      baseEnv({
        ADMIN_ADDRESSES: ` ${ADDRESS.toLowerCase()} , ${ADDRESS},${OTHER.toLowerCase()},`,
        BASE_PAYMENT_ADDRESSES: `${OTHER.toUpperCase().replace("0X", "0x")},${OTHER}`,
      }),
    );
    expect(config.adminAddresses).toEqual([ADDRESS, OTHER]);
    expect(config.networks[0]?.paymentAddresses).toEqual([OTHER]);
  });

  it("reads a USDC, certificate, reward distributor and subscription manager override in checksum form", () => {
    const config = valid(
      baseEnv({
        BASE_USDC_ADDRESS: OTHER.toLowerCase(),
        BASE_CERTIFICATE_ADDRESS: ADDRESS.toLowerCase(),
        BASE_REWARD_DISTRIBUTOR_ADDRESS: OTHER.toLowerCase(),
        BASE_SUBSCRIPTION_MANAGER_ADDRESS: ADDRESS.toLowerCase(),
        VOUCHER_KEY_FILE: join(directory, "secrets.key"),
      }),
    );
    expect(config.networks[0]).toMatchObject({
      usdc: OTHER,
      certificate: ADDRESS,
      rewardDistributor: OTHER,
      subscriptionManager: ADDRESS,
    });
    expect(config.voucherPrivateKey).toBe(`0x${KEY}`);
  });

  it("treats an empty or blank value as unset", () => {
    const config = valid(baseEnv({ WEBHOOK_CONCURRENCY: "", BASE_CONFIRMATIONS: "   ", VOUCHER_KEY_FILE: " ", PORT: "" }));
    expect([config.dispatcher.concurrency, config.networks[0]?.confirmations, config.voucherPrivateKey, config.port]).toEqual([
      32,
      10,
      undefined,
      undefined,
    ]);
  });

  it("reads a value with blanks around it", () => {
    expect(valid(baseEnv({ WEBHOOK_CONCURRENCY: " 12 ", LOCAL_MODE: " false " })).dispatcher.concurrency).toBe(12);
  });

  it("lists each network once when NETWORKS repeats it, in the order given", () => {
    const config = valid(
      baseEnv({
        NETWORKS: "base-sepolia, base,,base",
        BASE_SEPOLIA_RPC_URL: "https://sepolia.example",
        BASE_SEPOLIA_START_BLOCK: "2",
      }),
    );
    expect(config.networks.map((network) => [network.name, network.chainId])).toEqual([
      ["base-sepolia", 84532],
      ["base", 8453],
    ]);
  });

  it("reads each network's variables under its own prefix", () => {
    const config = valid(
      baseEnv({
        NETWORKS: "base,base-sepolia",
        BASE_SEPOLIA_RPC_URL: "https://sepolia.example",
        BASE_SEPOLIA_START_BLOCK: "2",
        BASE_SEPOLIA_CONFIRMATIONS: "7",
        BASE_CONFIRMATIONS: "12",
      }),
    );
    expect(config.networks.map((network) => [network.rpcUrl, network.startBlock, network.confirmations])).toEqual([
      ["https://base.example", 1, 12],
      ["https://sepolia.example", 2, 7],
    ]);
  });
});

describe("readConfig refusals", () => {
  it.each([
    ["WORKERS_STOP_GRACE_MS", "60001", 'WORKERS_STOP_GRACE_MS: at most 60000 (got "60001")'],
    ["WORKER_SAFETY_POLL_MS", "99", 'WORKER_SAFETY_POLL_MS: at least 100 (got "99")'],
    ["WEBHOOK_RETRY_BASE_MS", "0", 'WEBHOOK_RETRY_BASE_MS: at least 1 (got "0")'],
    ["WEBHOOK_RETRY_MAX_DELAY_MS", "604800001", 'WEBHOOK_RETRY_MAX_DELAY_MS: at most 604800000 (got "604800001")'],
    ["WEBHOOK_RETRY_WINDOW_MS", "-5", 'WEBHOOK_RETRY_WINDOW_MS: at least 0 (got "-5")'],
    ["WEBHOOK_ATTEMPT_TIMEOUT_MS", "99", 'WEBHOOK_ATTEMPT_TIMEOUT_MS: at least 100 (got "99")'],
    ["WEBHOOK_ENDPOINT_CONCURRENCY", "1.5", 'WEBHOOK_ENDPOINT_CONCURRENCY: not a whole number (got "1.5")'],
    ["WEBHOOK_PARTNER_CONCURRENCY", "1001", 'WEBHOOK_PARTNER_CONCURRENCY: at most 1000 (got "1001")'],
    ["PORTAL_SESSION_TTL_SECONDS", "59", 'PORTAL_SESSION_TTL_SECONDS: at least 60 (got "59")'],
    ["VERIFY_RATE_WINDOW_SECONDS", "3601", 'VERIFY_RATE_WINDOW_SECONDS: at most 3600 (got "3601")'],
    ["RWA_RESERVATION_SECONDS", "4", 'RWA_RESERVATION_SECONDS: at least 5 (got "4")'],
    ["BODY_LIMIT_BYTES", "1023", 'BODY_LIMIT_BYTES: at least 1024 (got "1023")'],
    ["PUBLIC_BODY_LIMIT_BYTES", "1048577", 'PUBLIC_BODY_LIMIT_BYTES: at most 1048576 (got "1048577")'],
    ["SIGN_IN_RATE_LIMIT", "0", 'SIGN_IN_RATE_LIMIT: at least 1 (got "0")'],
    ["RATE_LIMIT_WINDOW_SECONDS", "ten", 'RATE_LIMIT_WINDOW_SECONDS: not a number (got "ten")'],
    ["RELAYER_LOW_BALANCE_WEI", "1.5", 'RELAYER_LOW_BALANCE_WEI: a whole number of wei (got "1.5")'],
    ["RELAYER_MIN_AMOUNT", "1e5", 'RELAYER_MIN_AMOUNT: a whole number of USDC base units (got "1e5")'],
    ["RELAYER_PARTNER_DAILY_GAS_WEI", "-1", 'RELAYER_PARTNER_DAILY_GAS_WEI: a whole number of wei (got "-1")'],
    ["RELAYER_BALANCE_FLOOR_WEI", "1".repeat(31), `RELAYER_BALANCE_FLOOR_WEI: a whole number of wei (got "${"1".repeat(31)}")`],
    ["RELAYER_SESSION_RELAYS", "0", 'RELAYER_SESSION_RELAYS: at least 1 (got "0")'],
    ["INDEXER_STALL_TIMEOUT_MS", "999", 'INDEXER_STALL_TIMEOUT_MS: at least 1000 (got "999")'],
    ["INDEXER_STALL_RESTART", "no", 'INDEXER_STALL_RESTART: must be true or false (got "no")'],
    ["INDEXER_RPC_TRANSPORT", "viem", 'INDEXER_RPC_TRANSPORT: must be bounded or ponder (got "viem")'],
    ["DATABASE_SCHEMA", "Public", 'DATABASE_SCHEMA: not a plain schema name (got "Public")'],
    ["DATABASE_SCHEMA", "index;drop", 'DATABASE_SCHEMA: not a plain schema name (got "index;drop")'],
    ["BASE_POLLING_INTERVAL_MS", "60001", 'BASE_POLLING_INTERVAL_MS: at most 60000 (got "60001")'],
    ["BASE_CONFIRMATIONS", "1001", 'BASE_CONFIRMATIONS: at most 1000 (got "1001")'],
    ["BASE_REWARD_DISTRIBUTOR_ADDRESS", "0x12", 'BASE_REWARD_DISTRIBUTOR_ADDRESS: not an address (got "0x12")'],
    ["BASE_SUBSCRIPTION_MANAGER_ADDRESS", "0x12", 'BASE_SUBSCRIPTION_MANAGER_ADDRESS: not an address (got "0x12")'],
  ])("refuses %s=%s with its range or format", (name, value, expected) => {
    expect(readConfig(baseEnv({ [name]: value })).problems).toEqual([expected]);
  });

  it.each([
    ["STORE_URL", "mysql://app:hunter2@db/store", "STORE_URL: must be postgres://…, postgresql://… or pglite:<directory>"],
    ["BASE_WS_URL", "https://key-s3cret@node/ws", "BASE_WS_URL: not a ws:// or wss:// URL"],
  ])("names a malformed sensitive %s without echoing its value", (name, value, expected) => {
    expect(readConfig(baseEnv({ [name]: value })).problems).toEqual([expected]);
  });

  it("refuses a NETWORKS that names no network, in house words", () => {
    const { problems, config } = readConfig(baseEnv({ NETWORKS: "," }));
    expect(problems).toEqual(['NETWORKS: names no network (got ",")']);
    expect(config.networks).toEqual([]);
  });

  it("still checks the known networks of a NETWORKS that also names an unknown one", () => {
    const { problems, config } = readConfig({ ...baseEnv({ NETWORKS: "base,polygon" }), BASE_RPC_URL: undefined });
    expect(problems).toEqual([
      'NETWORKS: not one of base, base-sepolia, local (got "base,polygon")',
      'No RPC URL for network "base": set BASE_RPC_URL (an HTTPS endpoint of a base node)',
    ]);
    expect(config.networks.map((network) => network.name)).toEqual(["base"]);
  });

  it("does not also say 'no RPC URL' when the RPC URL is set but malformed", () => {
    expect(readConfig(baseEnv({ BASE_RPC_URL: "base.example" })).problems).toEqual(["BASE_RPC_URL: not an http(s) URL"]);
  });

  it("does not also say 'no start block' when the start block is set but malformed", () => {
    expect(readConfig(baseEnv({ BASE_START_BLOCK: "latest" })).problems).toEqual([
      'BASE_START_BLOCK: not a number (got "latest")',
    ]);
  });

  it("asks a Base Sepolia network for its RPC URL and start block by its own prefix", () => {
    expect(readConfig(baseEnv({ NETWORKS: "base-sepolia" })).problems).toEqual([
      'No RPC URL for network "base-sepolia": set BASE_SEPOLIA_RPC_URL (an HTTPS endpoint of a base-sepolia node)',
      'No start block for network "base-sepolia": set BASE_SEPOLIA_START_BLOCK to a block shortly before your payment addresses were first used',
    ]);
  });

  it("requires the voucher key for a reward distributor off the local chain", () => {
    expect(readConfig(baseEnv({ BASE_REWARD_DISTRIBUTOR_ADDRESS: ADDRESS })).problems).toEqual([
      "VOUCHER_KEY_FILE is not set, but BASE_REWARD_DISTRIBUTOR_ADDRESS names a reward distributor: without the voucher key no reward can be claimed",
    ]);
  });

  it("lists a certificate and a reward distributor without a voucher key as two problems", () => {
    const { problems } = readConfig(baseEnv({ BASE_CERTIFICATE_ADDRESS: ADDRESS, BASE_REWARD_DISTRIBUTOR_ADDRESS: OTHER }));
    expect(problems.map((problem) => problem.slice(0, 55))).toEqual([
      "VOUCHER_KEY_FILE is not set, but BASE_CERTIFICATE_ADDRE",
      "VOUCHER_KEY_FILE is not set, but BASE_REWARD_DISTRIBUTO",
    ]);
  });

  it("does not ask for a secrets key twice when SECRETS_KEY_FILE is set but unreadable", () => {
    const absent = join(directory, "absent.key");
    const { problems, config } = readConfig(baseEnv({ SECRETS_KEY_FILE: absent }));
    expect(problems).toEqual([`SECRETS_KEY_FILE: cannot read ${absent} (no such file)`]);
    expect([config.secretsKey, config.secretsKeyPath]).toEqual([undefined, absent]);
  });

  it("reads a relayer key per network and refuses a malformed one under its network's name", () => {
    const good = file("relayer.key", `0x${"cd".repeat(32)}`);
    const bad = file("relayer-bad.key", "cd".repeat(31));
    const config = valid(baseEnv({ BASE_RELAYER_KEY_FILE: good }));
    expect([config.relayerKeys, config.networks[0]?.relayerPrivateKey]).toEqual([
      { base: `0x${"cd".repeat(32)}` },
      `0x${"cd".repeat(32)}`,
    ]);
    expect(readConfig(baseEnv({ BASE_RELAYER_KEY_FILE: bad })).problems).toEqual([
      `BASE_RELAYER_KEY_FILE: ${bad} must hold 64 hex digits (32 bytes), with or without 0x`,
    ]);
  });
});

describe("readConfig in local mode", () => {
  it("needs no PUBLIC_BASE_URL and generates the secrets key in the data directory", () => {
    const dataDir = localDataDir("local-mode", DEPLOYMENT);
    const config = valid({ LOCAL_MODE: "true", DATA_DIR: dataDir });
    expect([config.localMode, config.publicBaseUrl, config.secretsKey, config.secretsKeyPath]).toEqual([
      true,
      undefined,
      undefined,
      join(dataDir, "secrets.key"),
    ]);
  });

  it("takes the local chain's RPC URL, contracts, start block and payment addresses from the deployment file", () => {
    const dataDir = localDataDir("local-deployment", DEPLOYMENT);
    const config = valid({ LOCAL_MODE: "true", DATA_DIR: dataDir, LOCAL_PAYMENT_ADDRESSES: ADDRESS });
    expect(config.networks).toEqual([
      {
        name: "local",
        chainId: 31337,
        rpcUrl: "http://127.0.0.1:8545",
        usdc: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
        certificate: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
        rewardDistributor: "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
        subscriptionManager: "0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
        paymentAddresses: [ADDRESS, OTHER],
        startBlock: 7,
        confirmations: 1,
        pollingIntervalMs: 100,
        wsUrl: undefined,
        relayerPrivateKey: undefined,
      },
    ]);
  });

  it("lets the environment win over the deployment file", () => {
    const dataDir = localDataDir("local-override", DEPLOYMENT);
    const config = valid({
      LOCAL_MODE: "true",
      DATA_DIR: dataDir,
      LOCAL_RPC_URL: "http://127.0.0.1:9999",
      LOCAL_START_BLOCK: "3",
      LOCAL_USDC_ADDRESS: OTHER,
    });
    expect(config.networks[0]).toMatchObject({ rpcUrl: "http://127.0.0.1:9999", startBlock: 3, usdc: OTHER });
  });

  it("needs no voucher key for the local chain's certificate and distributor", () => {
    const dataDir = localDataDir("local-voucher", DEPLOYMENT);
    expect(readConfig({ LOCAL_MODE: "true", DATA_DIR: dataDir }).problems).toEqual([]);
  });

  it("without a deployment file asks for an RPC URL and a USDC address, and not for a start block", () => {
    const dataDir = join(directory, "local-empty");
    expect(readConfig({ LOCAL_MODE: "true", DATA_DIR: dataDir }).problems).toEqual([
      `No RPC URL for network "local": set LOCAL_RPC_URL or run \`npm start\`, which starts Anvil and writes ${localDeploymentPath(dataDir)}`,
      'No USDC address for network "local": set LOCAL_USDC_ADDRESS',
    ]);
  });

  it("reports a deployment file that does not validate, and goes on", () => {
    const dataDir = localDataDir("local-broken", { ...DEPLOYMENT, paymentAddresses: [] });
    const { problems } = readConfig({ LOCAL_MODE: "true", DATA_DIR: dataDir, LOCAL_RPC_URL: "http://127.0.0.1:8545" });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(new RegExp(`^${localDeploymentPath(dataDir).replaceAll(".", "\\.")} cannot be read: `));
    expect(problems[1]).toBe('No USDC address for network "local": set LOCAL_USDC_ADDRESS');
  });
});

describe("loadConfig and ConfigError", () => {
  it("returns the configuration when nothing is wrong", () => {
    expect(loadConfig(baseEnv()).networks.map((network) => network.chainId)).toEqual([8453]);
  });

  it("throws one ConfigError listing every problem, counted in its message", () => {
    let caught: unknown;
    try {
      loadConfig({ NETWORKS: "base", DATA_DIR: join(directory, "data"), WORKERS: "maybe" });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.name).toBe("ConfigError");
    expect(error.problems).toHaveLength(5);
    expect(error.message.split("\n")[0]).toBe("The configuration has 5 problems (see docs/configuration.md):");
    expect(error.message.split("\n")[1]).toBe('  - WORKERS: must be on or off (got "maybe")');
  });

  it("says 'problem' in the singular for one", () => {
    expect(new ConfigError(["x"]).message).toBe("The configuration has 1 problem (see docs/configuration.md):\n  - x");
  });
});

describe("readKeyFile", () => {
  it.each([
    ["bare lower-case hex", KEY],
    ["0x-prefixed", `0x${KEY}`],
    ["upper-case with blanks and newline around it", `\n  ${KEY.toUpperCase()}  \n`],
  ])("reads %s as a lower-case 0x key", (_case, content) => {
    expect(readKeyFile("X_KEY_FILE", file("read.key", content))).toEqual({ key: `0x${KEY}` });
  });

  it.each([
    ["63 hex digits", KEY.slice(1)],
    ["65 hex digits", `${KEY}a`],
    ["a non-hex digit", `${KEY.slice(1)}g`],
    ["0X in capitals", `0X${KEY}`],
    ["two keys on two lines", `${KEY}\n${KEY}`],
    ["an empty file", ""],
  ])("refuses %s, naming the variable and the file", (_case, content) => {
    const path = file("bad.key", content);
    expect(readKeyFile("X_KEY_FILE", path)).toEqual({
      problem: `X_KEY_FILE: ${path} must hold 64 hex digits (32 bytes), with or without 0x`,
    });
  });

  it("says why a file cannot be read: missing, or a directory", () => {
    const absent = join(directory, "nope.key");
    expect(readKeyFile("X_KEY_FILE", absent)).toEqual({ problem: `X_KEY_FILE: cannot read ${absent} (no such file)` });
    expect(readKeyFile("X_KEY_FILE", directory)).toEqual({ problem: `X_KEY_FILE: cannot read ${directory} (EISDIR)` });
  });
});

describe("networks", () => {
  it.each([
    ["base", "BASE_"],
    ["base-sepolia", "BASE_SEPOLIA_"],
    ["local", "LOCAL_"],
  ] as [NetworkName, string][])("%s reads its variables under %s", (name, prefix) => {
    expect(envPrefix(name)).toBe(prefix);
  });

  it("knows exactly the networks that variables.ts declares, each with a chain id and confirmations", () => {
    expect(Object.keys(KNOWN_NETWORKS).sort()).toEqual([...NETWORK_NAMES].sort());
    expect(Object.values(KNOWN_NETWORKS).map((network) => [network.chainId, network.defaultConfirmations])).toEqual([
      [8453, 10],
      [84532, 3],
      [31337, 1],
    ]);
  });

  it("puts a deployment file under deployments/<chain id>.json of the data directory", () => {
    expect(localDeploymentPath("/srv/data")).toBe("/srv/data/deployments/31337.json");
    expect(localDeploymentPath("/srv/data", 84532)).toBe("/srv/data/deployments/84532.json");
  });

  it("reads no deployment from a data directory without one, and a valid one as written", () => {
    expect(readLocalDeployment(join(directory, "no-such-dir"))).toBeUndefined();
    const dataDir = localDataDir("read-deployment", DEPLOYMENT);
    expect(readLocalDeployment(dataDir)).toEqual(DEPLOYMENT);
  });

  it("accepts a deployment file written before rewards existed", () => {
    const { rewardDistributor: _, ...withoutRewards } = DEPLOYMENT;
    expect(readLocalDeployment(localDataDir("pre-rewards", withoutRewards))?.rewardDistributor).toBeUndefined();
  });

  it("accepts a deployment file written before subscriptions existed", () => {
    const { subscriptionManager: _, ...withoutSubscriptions } = DEPLOYMENT;
    expect(readLocalDeployment(localDataDir("pre-subscriptions", withoutSubscriptions))?.subscriptionManager).toBeUndefined();
  });

  it.each([
    ["a negative deploy block", { deployBlock: -1 }],
    ["a malformed USDC address", { usdc: "0x1234" }],
    ["no payment address", { paymentAddresses: [] }],
    ["an RPC URL that is not a URL", { rpcUrl: "127.0.0.1 port 8545" }],
    ["a chain id that is not a whole number", { chainId: "31337" }],
  ])("refuses a deployment file with %s", (_case, change) => {
    const dataDir = localDataDir(`bad-deployment-${Object.keys(change)[0]}`, { ...DEPLOYMENT, ...change });
    expect(() => readLocalDeployment(dataDir)).toThrow();
  });
});

describe("settingsOf", () => {
  it("hands the service exactly the settings of the configuration, the index schema under its own name", () => {
    const config = valid(baseEnv({ DATABASE_SCHEMA: "idx", ADMIN_ADDRESSES: ADDRESS, PORT: "9000" }));
    const settings = settingsOf(config);
    expect(settings).toEqual({
      localMode: false,
      adminAddresses: [ADDRESS],
      voucherPrivateKey: undefined,
      publicBaseUrl: "https://pay.example.com",
      indexSchema: "idx",
      dispatcher: config.dispatcher,
      portal: config.portal,
      relayerKeys: {},
      requestLimits: config.requestLimits,
      watchdog: config.watchdog,
      port: "9000",
      relayerReplaceAfterMs: 30_000,
      relayerLowBalanceWei: 2_000_000_000_000_000n,
      relayLimits: config.relayLimits,
    });
    // No key of the store, the index or a secrets file reaches the request handlers' settings.
    expect(Object.keys(settings)).not.toContain("secretsKey");
    expect(Object.keys(settings)).not.toContain("databaseUrl");
  });
});

describe("variables.ts", () => {
  it("marks every variable that may carry a credential as sensitive", () => {
    const sensitive = [
      ...Object.entries(SERVICE_VARIABLES).filter(([, variable]) => "sensitive" in variable && variable.sensitive),
      ...Object.entries(NETWORK_VARIABLES).filter(([, variable]) => "sensitive" in variable && variable.sensitive),
    ].map(([name]) => name);
    expect(sensitive.sort()).toEqual(["DATABASE_URL", "RPC_URL", "STORE_URL", "WS_URL"]);
  });
});

// Moved from test/checkout-networks.test.ts, which keeps the two networks on real chains: a pure
// rule of the configuration needs no stack.
describe("network configuration (as test/checkout-networks.test.ts had it)", () => {
  it("validates network configuration with clear errors", () => {
    const loadNetworks = (env: NodeJS.ProcessEnv) => loadConfig({ LOCAL_MODE: "true", ...env }).networks;
    expect(() => loadNetworks({ NETWORKS: "base" })).toThrow(/No RPC URL for network "base": set BASE_RPC_URL/);
    expect(() =>
      loadNetworks({ NETWORKS: "base", BASE_RPC_URL: "https://node.example", BASE_PAYMENT_ADDRESSES: "0x1234" }),
    ).toThrow(/BASE_PAYMENT_ADDRESSES/);
    expect(() => loadNetworks({ NETWORKS: "mainnet" })).toThrow(/not one of base, base-sepolia, local/);
    // Ponder itself refuses under 100 ms; we refuse first, naming the variable.
    expect(() =>
      loadNetworks({
        NETWORKS: "base",
        BASE_RPC_URL: "https://node.example",
        BASE_PAYMENT_ADDRESSES: ADDRESS,
        BASE_POLLING_INTERVAL_MS: "50",
        BASE_START_BLOCK: "1",
      }),
    ).toThrow(/BASE_POLLING_INTERVAL_MS/);
    const [base] = loadNetworks({
      NETWORKS: "base",
      BASE_RPC_URL: "https://node.example",
      BASE_PAYMENT_ADDRESSES: ADDRESS,
      BASE_START_BLOCK: "20000000",
    });
    expect(base).toMatchObject({ chainId: 8453, usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", confirmations: 10 });
  });
});
