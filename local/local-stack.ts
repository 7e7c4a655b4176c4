import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Address, createPublicClient, createTestClient, http, isAddressEqual, parseEther, parseUnits } from "viem";
import { OPERATOR } from "../api/audit/audit-log.js";
import { findEligibility, setEligibility } from "../api/compliance/eligibility.js";
import { listIssuers, registerIssuer } from "../api/compliance/issuers.js";
import {
  envPrefix,
  KNOWN_NETWORKS,
  type LocalDeployment,
  localDeploymentPath,
  type NetworkName,
  readLocalDeployment,
} from "../api/config/networks.js";
import { NEW_INDEX_MARKER } from "../api/indexed/sync-cache-guard.js";
import { apiKeyRecorded, createPartner, findPartner, issueApiKey } from "../api/partners/api-keys.js";
import { addMember, listMembers } from "../api/partners/members.js";
import { insertPaymentAddress } from "../api/partners/payment-addresses.js";
import { testAccountAddress } from "../api/sign-in/test-accounts.js";
import { migrateStore, openStore } from "../api/store/open-store.js";
import { ensureConsoleBuilt } from "../console/build.js";
import { type AnvilInstance, startAnvil } from "./anvil.js";
import { deployCertificate, deployContracts, deployRewardDistributor, deploySubscriptionManager } from "./deploy.js";
import { alignForkClock, type ForkTarget, fundAccountsWithForkUsdc, resolveForkTarget } from "./fork.js";
import {
  addressOf,
  anvilAccounts,
  ensureSecretsKeyFile,
  loadOrCreateLocalSecrets,
  localRelayerAccount,
  writeRelayerKeyFile,
  writeVoucherKeyFile,
} from "./local-secrets.js";
import { type PonderProcess, startPonder } from "./ponder-process.js";
import { findFreePort } from "./ports.js";

export const PROJECT_ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** `.data/local.json` (described in README.md): everything a tool needs to drive the local stack. */
export type LocalJson = {
  baseUrl: string;
  /** `local`, or in fork mode the network forked (`base`, `base-sepolia`). */
  network: NetworkName;
  chainId: number;
  rpcUrl: string;
  contracts: { usdc: string; certificate: string; rewardDistributor: string; subscriptionManager: string };
  partner: { id: string; apiKey: string; paymentAddress: string };
  admin: { address: string; privateKey: string };
  accounts: { address: string; privateKey: string }[];
  /** Fork mode only: the upstream forked and the block the fork starts at. */
  fork?: { url: string; blockNumber: number };
};

export type LocalStack = {
  dataDir: string;
  local: LocalJson;
  deployment: LocalDeployment;
  anvil: AnvilInstance;
  ponder: PonderProcess;
  /** Environment the service runs with (tests restart it with the same). */
  serviceEnv: NodeJS.ProcessEnv;
  restartService: (extraEnv?: NodeJS.ProcessEnv) => Promise<PonderProcess>;
  /**
   * Ends the service with `signal` (SIGKILL: a crash) and leaves it down until
   * `restartService()`: a test can then ask the rest of a fleet while the indexer is away.
   */
  stopService: (signal?: NodeJS.Signals) => Promise<void>;
  /** How many times the service exited on its own and was started again. */
  serviceRestarts: () => number;
  stop: () => Promise<void>;
};

export const DEMO_PARTNER_ID = "ptr_demo";

/**
 * What the service is started with: outside local mode (a restart with LOCAL_MODE=false)
 * no test identity goes along, and the admin test account leaves ADMIN_ADDRESSES (issue 40).
 */
export function serviceEnvForMode(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.LOCAL_MODE?.trim() === "true") return env;
  const testAdmin = testAccountAddress("admin").toLowerCase();
  const admins = (env.ADMIN_ADDRESSES ?? "").split(",").map((address) => address.trim());
  return { ...env, ADMIN_ADDRESSES: admins.filter((address) => address !== "" && address.toLowerCase() !== testAdmin).join(",") };
}
const USDC_PER_ACCOUNT = parseUnits("1000000", 6);

/**
 * Starts the whole local service: Anvil, contracts, demo partner, indexer + API +
 * workers. Reuses what `dataDir` already holds; if the chain it recorded is gone
 * (Anvil state lost), deploys again and starts a fresh index and store.
 */
export async function startLocalStack(options: {
  dataDir: string;
  anvilPort?: number;
  apiPort?: number;
  /** Keep the chain in `<dataDir>/anvil-state.json` across restarts (npm start). */
  persistChain?: boolean;
  /** Seconds between blocks; default: a block per transaction. */
  blockTime?: number;
  /** Unix seconds of the chain's genesis block (tests move the chain clock). */
  genesisTimestamp?: number;
  env?: NodeJS.ProcessEnv;
  inheritOutput?: boolean;
  /**
   * Fork mode: Anvil forks this upstream (Base or Base Sepolia, told apart by its
   * chain id) instead of starting an empty chain. See README "Fork mode".
   */
  fork?: { url: string; blockNumber?: number };
  /** Called with the new service after it exited on its own and was started again. */
  onServiceRestart?: (ponder: PonderProcess) => void;
  /**
   * A directory holding a new, empty embedded index (what `new PGlite(dir)` creates, and
   * nothing else): copied in when the data directory has no index yet. Creating a PGlite
   * database takes seconds of CPU; the tests start dozens of stacks from one copy.
   */
  emptyIndexTemplate?: string;
}): Promise<LocalStack> {
  const dataDir = resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const secrets = loadOrCreateLocalSecrets(dataDir);
  // Before anything starts: a fork URL that does not answer, or answers a chain we do not know, stops here.
  const fork = options.fork === undefined ? undefined : await resolveForkTarget(options.fork);
  const network: NetworkName = fork?.network ?? "local";
  const chainId = fork?.chainId ?? KNOWN_NETWORKS.local.chainId;
  // A fork lives as long as its Anvil: its index and store go in a directory of their
  // own, started afresh each time, so the plain local chain's data is left alone.
  const serviceDataDir = fork === undefined ? dataDir : join(dataDir, `fork-${fork.network}`);

  const anvil = await startAnvil({
    port: options.anvilPort,
    chainId,
    blockTime: options.blockTime,
    genesisTimestamp: fork === undefined ? options.genesisTimestamp : undefined,
    stateFile: options.persistChain && fork === undefined ? join(dataDir, "anvil-state.json") : undefined,
    forkUrl: fork?.url,
    forkBlockNumber: fork?.blockNumber,
  });

  try {
    const deployment =
      fork === undefined
        ? await ensureDeployment({ dataDir, rpcUrl: anvil.rpcUrl, chainId, secrets })
        : await prepareFork({ dataDir: serviceDataDir, rpcUrl: anvil.rpcUrl, fork, secrets });
    const voucherKeyPath = writeVoucherKeyFile(dataDir, secrets.voucherPrivateKey);
    const relayer = localRelayerAccount();
    await fundLocalRelayer(anvil.rpcUrl, relayer.address);
    await seedDemoPartner({
      dataDir: serviceDataDir,
      storeUrl: options.env?.STORE_URL,
      apiKey: secrets.demoApiKey,
      deployment,
      network,
    });
    await seedTestAccounts({ dataDir: serviceDataDir, storeUrl: options.env?.STORE_URL });

    const prefix = envPrefix(network);
    const serviceEnv: NodeJS.ProcessEnv = {
      DATA_DIR: serviceDataDir,
      NETWORKS: network,
      [`${prefix}RPC_URL`]: anvil.rpcUrl,
      // Mining on an interval, like a real network, Anvil pushes each new block over a
      // WebSocket on the same port and the indexer hears of it at once instead of at its
      // next poll. With a block per transaction the chain may sit idle for long, and a
      // subscribed Ponder only moves its head past the blocks before its start on the
      // next new block: there it polls.
      ...(options.blockTime ? { [`${prefix}WS_URL`]: anvil.rpcUrl.replace(/^http/, "ws") } : {}),
      // A fork runs its network as configured for that network (canonical USDC, its
      // confirmations and polling), with the fork's own certificate and payment
      // addresses, indexed from the fork block: the upstream's history is not ours.
      ...(fork === undefined
        ? {}
        : {
            [`${prefix}PAYMENT_ADDRESSES`]: deployment.paymentAddresses.join(","),
            [`${prefix}CERTIFICATE_ADDRESS`]: deployment.certificate,
            ...(deployment.rewardDistributor === undefined
              ? {}
              : { [`${prefix}REWARD_DISTRIBUTOR_ADDRESS`]: deployment.rewardDistributor }),
            ...(deployment.subscriptionManager === undefined
              ? {}
              : { [`${prefix}SUBSCRIPTION_MANAGER_ADDRESS`]: deployment.subscriptionManager }),
            [`${prefix}START_BLOCK`]: String(deployment.deployBlock),
          }),
      VOUCHER_KEY_FILE: voucherKeyPath,
      // The relayer of gasless payments, also on a fork (there it relays to Circle's own USDC).
      [`${prefix}RELAYER_KEY_FILE`]: writeRelayerKeyFile(dataDir, relayer.privateKey),
      SECRETS_KEY_FILE: ensureSecretsKeyFile(dataDir),
      // The admin wallet of local.json, and the console's admin test account (docs/console.md, "Local mode").
      ADMIN_ADDRESSES: `${addressOf(secrets.adminPrivateKey)},${testAccountAddress("admin")}`,
      LOCAL_MODE: "true",
      ...options.env,
    };
    const port = options.apiPort ?? (await findFreePort());
    // The console is served from its build; build it now if the sources changed.
    await ensureConsoleBuilt({ log: (line) => console.log(line) });
    let env = serviceEnv;
    let stopping = false;
    let restarts = 0;
    /** Processes stopped on purpose (restartService, stop): their exit is not a failure. */
    const stoppedOnPurpose = new WeakSet<PonderProcess>();
    /** Bumped by every restartService(): a supervisor's restart begun before it gives way. */
    let generation = 0;
    /** The supervisor's restart under way, if any: a restartService() waits it out (one port, one service). */
    let restarting: Promise<void> | undefined;
    const start = () =>
      startPonder({ root: PROJECT_ROOT, port, env: serviceEnvForMode(env), inheritOutput: options.inheritOutput });
    // The service exits by itself when it cannot go on (its indexer watchdog exits with
    // code 75 when the index stays behind the chain; Ponder does on a fatal error): like
    // a process manager, start it again, with a growing pause while starts fail.
    const supervise = (service: PonderProcess) => {
      service.process.once("exit", (code, signal) => {
        if (stopping || stoppedOnPurpose.has(service)) return;
        const restart = restartAfterExit(code, signal);
        restarting = restart;
        void restart.finally(() => {
          if (restarting === restart) restarting = undefined;
        });
      });
    };
    const restartAfterExit = async (code: number | null, signal: NodeJS.Signals | null) => {
      // A restartService() meanwhile supersedes this restart: its process is the service.
      const generationAtExit = generation;
      const superseded = () => stopping || generation !== generationAtExit;
      console.error(JSON.stringify({ level: "warn", msg: "The service exited; starting it again", code, signal }));
      for (let attempt = 0; !superseded(); attempt++) {
        try {
          const restarted = await start();
          if (superseded()) return void (await restarted.stop());
          ponder = restarted;
          restarts++;
          supervise(restarted);
          options.onServiceRestart?.(restarted);
          return;
        } catch (error) {
          const pause = Math.min(1_000 * 2 ** attempt, 30_000);
          console.error(
            JSON.stringify({
              level: "error",
              msg: "The service did not start again",
              retryInMs: pause,
              error: String(error).slice(0, 2000),
            }),
          );
          await new Promise((resolve) => setTimeout(resolve, pause));
        }
      }
    };
    const indexDirectory = join(serviceDataDir, "ponder");
    if (
      options.emptyIndexTemplate !== undefined &&
      fork === undefined &&
      (serviceEnv.DATABASE_URL ?? process.env.DATABASE_URL) === undefined &&
      !existsSync(indexDirectory)
    ) {
      cpSync(options.emptyIndexTemplate, indexDirectory, { recursive: true });
      // Ponder has written nothing here yet: its first start need not check a cache (sync-cache-guard.ts).
      writeFileSync(join(indexDirectory, NEW_INDEX_MARKER), "");
    }
    let ponder = await start();
    supervise(ponder);

    const local: LocalJson = {
      baseUrl: ponder.baseUrl,
      network,
      chainId,
      rpcUrl: anvil.rpcUrl,
      contracts: {
        usdc: deployment.usdc,
        certificate: deployment.certificate,
        rewardDistributor: deployment.rewardDistributor ?? "",
        subscriptionManager: deployment.subscriptionManager ?? "",
      },
      partner: { id: DEMO_PARTNER_ID, apiKey: secrets.demoApiKey, paymentAddress: deployment.paymentAddresses[0] as string },
      admin: { address: addressOf(secrets.adminPrivateKey), privateKey: secrets.adminPrivateKey },
      accounts: anvilAccounts(),
      ...(fork === undefined ? {} : { fork: { url: fork.url, blockNumber: fork.blockNumber } }),
    };
    writeFileSync(join(dataDir, "local.json"), `${JSON.stringify(local, null, 2)}\n`, { mode: 0o600 });

    const stack: LocalStack = {
      dataDir,
      local,
      deployment,
      anvil,
      get ponder() {
        return ponder;
      },
      serviceEnv,
      async restartService(extraEnv = {}) {
        generation++;
        // Both would take the same port: let a restart the supervisor began give way first.
        await restarting?.catch(() => undefined);
        stoppedOnPurpose.add(ponder);
        await ponder.stop();
        env = { ...serviceEnv, ...extraEnv };
        ponder = await start();
        supervise(ponder);
        return ponder;
      },
      async stopService(signal = "SIGTERM") {
        generation++;
        await restarting?.catch(() => undefined);
        stoppedOnPurpose.add(ponder);
        await ponder.stop(signal);
      },
      serviceRestarts: () => restarts,
      async stop() {
        stopping = true;
        await ponder.stop();
        await anvil.stop();
      },
    };
    return stack;
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

async function ensureDeployment(params: {
  dataDir: string;
  rpcUrl: string;
  chainId: number;
  secrets: ReturnType<typeof loadOrCreateLocalSecrets>;
}): Promise<LocalDeployment> {
  const existing = readLocalDeployment(params.dataDir);
  if (existing !== undefined) {
    const client = createPublicClient({ transport: http(params.rpcUrl) });
    const code = await client.getCode({ address: existing.certificate as `0x${string}` });
    if (code !== undefined && code !== "0x") {
      if (existing.rewardDistributor !== undefined && existing.subscriptionManager !== undefined) {
        return { ...existing, rpcUrl: params.rpcUrl };
      }
      // Deployed before rewards or subscriptions existed: add what is missing to the same chain, keep everything else.
      const deployer = anvilAccounts()[0];
      if (deployer === undefined) throw new Error("no anvil account");
      const chain = { rpcUrl: params.rpcUrl, chainId: params.chainId, deployerPrivateKey: deployer.privateKey };
      const rewardDistributor =
        existing.rewardDistributor ??
        (await deployRewardDistributor({ ...chain, voucherSigner: existing.voucherSigner as Address })).rewardDistributor;
      const subscriptionManager = existing.subscriptionManager ?? (await deploySubscriptionManager(chain)).subscriptionManager;
      const upgraded: LocalDeployment = { ...existing, rpcUrl: params.rpcUrl, rewardDistributor, subscriptionManager };
      writeFileSync(localDeploymentPath(params.dataDir), `${JSON.stringify(upgraded, null, 2)}\n`);
      return upgraded;
    }
    // The chain this data directory indexed is gone: its index and store describe
    // payments that no longer exist, so start both afresh.
    for (const stale of ["ponder", "app.sqlite", "app.sqlite-wal", "app.sqlite-shm"]) {
      rmSync(join(params.dataDir, stale), { recursive: true, force: true });
    }
  }
  const accounts = anvilAccounts();
  const deployer = accounts[0];
  if (deployer === undefined) throw new Error("no anvil account");
  const contracts = await deployContracts({
    rpcUrl: params.rpcUrl,
    chainId: params.chainId,
    deployerPrivateKey: deployer.privateKey,
    voucherSigner: addressOf(params.secrets.voucherPrivateKey),
    mintTo: accounts.map((account) => ({ address: account.address, amount: USDC_PER_ACCOUNT })),
  });
  const deployment: LocalDeployment = {
    chainId: params.chainId,
    rpcUrl: params.rpcUrl,
    usdc: contracts.usdc,
    certificate: contracts.certificate,
    rewardDistributor: contracts.rewardDistributor,
    subscriptionManager: contracts.subscriptionManager,
    voucherSigner: contracts.voucherSigner,
    deployBlock: contracts.deployBlock,
    paymentAddresses: params.secrets.paymentPrivateKeys.map(addressOf),
  };
  mkdirSync(join(params.dataDir, "deployments"), { recursive: true });
  writeFileSync(localDeploymentPath(params.dataDir), `${JSON.stringify(deployment, null, 2)}\n`);
  return deployment;
}

/**
 * A fresh fork: its clock moved to now, the certificate contract deployed, and the
 * test accounts funded with the fork's canonical USDC through its minter role. The
 * deployment's `deployBlock` is the block after the fork block, where the indexer
 * starts: the fork block itself is the upstream's, and a transfer in it to a payment
 * address belongs to no session of this fork (it would become an unresolved payment).
 */
async function prepareFork(params: {
  dataDir: string;
  rpcUrl: string;
  fork: ForkTarget;
  secrets: ReturnType<typeof loadOrCreateLocalSecrets>;
}): Promise<LocalDeployment> {
  const { fork } = params;
  rmSync(params.dataDir, { recursive: true, force: true });
  mkdirSync(join(params.dataDir, "deployments"), { recursive: true });
  const accounts = anvilAccounts();
  const deployer = accounts[0];
  if (deployer === undefined) throw new Error("no anvil account");
  await alignForkClock({ rpcUrl: params.rpcUrl, chainId: fork.chainId });
  const { certificate } = await deployCertificate({
    rpcUrl: params.rpcUrl,
    chainId: fork.chainId,
    deployerPrivateKey: deployer.privateKey,
    voucherSigner: addressOf(params.secrets.voucherPrivateKey),
  });
  const { rewardDistributor } = await deployRewardDistributor({
    rpcUrl: params.rpcUrl,
    chainId: fork.chainId,
    deployerPrivateKey: deployer.privateKey,
    voucherSigner: addressOf(params.secrets.voucherPrivateKey),
  });
  const { subscriptionManager } = await deploySubscriptionManager({
    rpcUrl: params.rpcUrl,
    chainId: fork.chainId,
    deployerPrivateKey: deployer.privateKey,
  });
  await fundAccountsWithForkUsdc({
    rpcUrl: params.rpcUrl,
    chainId: fork.chainId,
    usdc: fork.usdc,
    minterPrivateKey: deployer.privateKey,
    accounts: accounts.map((account) => ({ address: account.address, amount: USDC_PER_ACCOUNT })),
  });
  const deployment: LocalDeployment = {
    chainId: fork.chainId,
    rpcUrl: params.rpcUrl,
    usdc: fork.usdc,
    certificate,
    rewardDistributor,
    subscriptionManager,
    voucherSigner: addressOf(params.secrets.voucherPrivateKey),
    deployBlock: fork.blockNumber + 1,
    paymentAddresses: params.secrets.paymentPrivateKeys.map(addressOf),
  };
  writeFileSync(localDeploymentPath(params.dataDir, fork.chainId), `${JSON.stringify(deployment, null, 2)}\n`);
  return deployment;
}

async function seedDemoPartner(params: {
  dataDir: string;
  storeUrl?: string;
  apiKey: string;
  deployment: LocalDeployment;
  network: NetworkName;
}) {
  const store = openStore({ storeUrl: params.storeUrl, dataDir: params.dataDir });
  try {
    await migrateStore(store);
    if ((await findPartner(store, DEMO_PARTNER_ID)) !== undefined) return;
    await createPartner(store, { id: DEMO_PARTNER_ID, name: "Demo shop" });
    if (!(await apiKeyRecorded(store, params.apiKey))) {
      await issueApiKey(store, { partnerId: DEMO_PARTNER_ID, mode: "test", apiKey: params.apiKey });
    }
    await insertPaymentAddress(store, {
      partnerId: DEMO_PARTNER_ID,
      network: params.network,
      chainId: params.deployment.chainId,
      address: params.deployment.paymentAddresses[0] as string,
    });
  } finally {
    await store.destroy();
  }
}

/**
 * The console's test accounts (api/sign-in/test-accounts.ts), each given its role once:
 * the partner account a member (role admin) of the demo partner, the issuer account a
 * registered issuer, the investor account an approved investor (KYC approved, US). The
 * admin account is an admin through ADMIN_ADDRESSES. Each step is skipped when done.
 */
async function seedTestAccounts(params: { dataDir: string; storeUrl?: string }) {
  const store = openStore({ storeUrl: params.storeUrl, dataDir: params.dataDir });
  try {
    const admin = { role: "admin" as const, address: testAccountAddress("admin") };
    const member = testAccountAddress("partner");
    if (
      !(await listMembers(store, { partnerId: DEMO_PARTNER_ID })).some((row) => isAddressEqual(row.address as Address, member))
    ) {
      await addMember(store, OPERATOR, { partnerId: DEMO_PARTNER_ID, address: member, role: "admin" });
    }
    const issuer = testAccountAddress("issuer");
    if (!(await listIssuers(store)).some((row) => isAddressEqual(row.address as Address, issuer))) {
      await registerIssuer(store, OPERATOR, { address: issuer, name: "Demo issuer" });
    }
    const investor = testAccountAddress("investor");
    if ((await findEligibility(store, investor)) === undefined) {
      await setEligibility(store, admin, { address: investor, kycStatus: "approved", jurisdiction: "US" });
    }
  } finally {
    await store.destroy();
  }
}

/** Tops the local relayer up to 100 ETH (it only ever pays gas); a no-op when it holds more. */
async function fundLocalRelayer(rpcUrl: string, address: `0x${string}`) {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const wanted = parseEther("100");
  if ((await client.getBalance({ address })) >= wanted) return;
  await createTestClient({ mode: "anvil", transport: http(rpcUrl) }).setBalance({ address, value: wanted });
}
