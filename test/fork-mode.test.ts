import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  type Hex,
  http,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KNOWN_NETWORKS } from "../api/config/networks.js";
import { testUsdcAbi } from "../contracts/generated/index.js";
import { type AnvilInstance, startAnvil } from "../local/anvil.js";
import { deployCertificate, deployTestUsdc } from "../local/deploy.js";
import { resolveForkTarget } from "../local/fork.js";
import { addressOf, anvilAccounts, loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { type LocalJson, PROJECT_ROOT, startLocalStack } from "../local/local-stack.js";
import { findFreePort } from "../local/ports.js";
import { simulate } from "../local/simulate.js";
import { simulateSubscription } from "../local/simulate-subscription.js";
import { sessionBody } from "./support/checkout-helpers.js";
import { waitFor } from "./support/test-stack.js";

/**
 * Fork mode (`FORK_URL=<rpc> npm start`) against an "upstream" Anvil that plays Base:
 * chain id 8453, and at Base's canonical USDC address a copy of the project's TestUSDC
 * runtime code (`anvil_setCode`) whose master minter is an address nobody here holds the
 * key of, as on Base. The stack is the real `npm start` process.
 */

const BASE_USDC = KNOWN_NETWORKS.base.canonicalUsdc as Address;
const BASE_SEPOLIA_USDC = KNOWN_NETWORKS["base-sepolia"].canonicalUsdc as Address;
const USDC_PER_ACCOUNT = 1_000_000_000_000n;
const accounts = anvilAccounts();
const key = (index: number) => accounts[index]!.privateKey;

type StartProcess = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

/** `npm start` as a developer runs it: `tsx local/start.ts` with the environment given. */
function runStart(env: Record<string, string>): StartProcess {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, "node_modules", "tsx", "dist", "cli.mjs"), "local/start.ts"], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, PONDER_TELEMETRY_DISABLED: "true", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function revertReason(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError) return reverted.reason;
    throw error;
  }
  throw new Error("expected the call to revert, but it succeeded");
}

function clientsOf(rpcUrl: string, chainId: number) {
  const chain = defineChain({
    id: chainId,
    name: `chain-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl);
  return {
    chain,
    publicClient: createPublicClient({ chain, transport, pollingInterval: 100 }),
    testClient: createTestClient({ chain, mode: "anvil", transport }),
    wallet: (privateKey: Hex) => createWalletClient({ chain, account: privateKeyToAccount(privateKey), transport }),
  };
}

/** Places TestUSDC's runtime code at `at` on the upstream, with `masterMinter` as its master minter. */
async function placeTokenAt(upstream: AnvilInstance, at: Address, masterMinter: Address): Promise<void> {
  const { publicClient, testClient, wallet } = clientsOf(upstream.rpcUrl, upstream.chainId);
  const source = await deployTestUsdc({ rpcUrl: upstream.rpcUrl, chainId: upstream.chainId, deployerPrivateKey: key(0) });
  const code = await publicClient.getCode({ address: source });
  await testClient.setCode({ address: at, bytecode: code as Hex });
  const hash = await wallet(key(9)).writeContract({
    address: at,
    abi: testUsdcAbi,
    functionName: "initializeMinterRole",
    args: [masterMinter],
  });
  expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
}

describe("fork mode: FORK_URL=<rpc> npm start", () => {
  let upstream: AnvilInstance;
  let dataDir: string;
  let start: StartProcess;
  let local: LocalJson;
  let forkBlock: bigint;
  const circleMasterMinter = addressOf(generatePrivateKey());
  const preForkHashes: Hex[] = [];
  let postForkHash: Hex;
  let inForkBlockHash: Hex;
  /** The upstream's URL with a key in its query, as providers hand them out: never printed. */
  let forkUrl: string;
  let paymentAddresses: Address[];

  beforeAll(async () => {
    // Upstream history a day old, so the fork also has to bring its clock to now.
    upstream = await startAnvil({ chainId: 8453, genesisTimestamp: Math.floor(Date.now() / 1000) - 86_400 });
    await placeTokenAt(upstream, BASE_USDC, circleMasterMinter);
    dataDir = mkdtempSync(join(tmpdir(), "fork-mode-"));
    paymentAddresses = loadOrCreateLocalSecrets(dataDir).paymentPrivateKeys.map((k) => addressOf(k));

    // History before the fork block: Circle's master minter configures a minter (by
    // impersonation here too), which pays the partner's payment addresses.
    const { publicClient, testClient, wallet } = clientsOf(upstream.rpcUrl, 8453);
    await testClient.setBalance({ address: circleMasterMinter, value: 10n ** 18n });
    await testClient.impersonateAccount({ address: circleMasterMinter });
    const configure = await createWalletClient({
      chain: clientsOf(upstream.rpcUrl, 8453).chain,
      account: circleMasterMinter,
      transport: http(upstream.rpcUrl),
    }).writeContract({
      address: BASE_USDC,
      abi: testUsdcAbi,
      functionName: "configureMinter",
      args: [accounts[9]!.address, 10n ** 9n],
    });
    await publicClient.waitForTransactionReceipt({ hash: configure });
    await testClient.stopImpersonatingAccount({ address: circleMasterMinter });
    const holder = wallet(key(9));
    const send = async (functionName: "mint" | "transfer", to: Address, amount: bigint) => {
      const hash = await holder.writeContract({ address: BASE_USDC, abi: testUsdcAbi, functionName, args: [to, amount] });
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
      return hash;
    };
    await send("mint", accounts[9]!.address, 500_000_000n);
    preForkHashes.push(await send("transfer", paymentAddresses[0]!, 5_000_000n));
    preForkHashes.push(await send("transfer", paymentAddresses[1]!, 7_000_000n));
    await testClient.mine({ blocks: 20 });
    // The fork block itself holds a transfer to a payment address: it is the upstream's, not the fork's.
    inForkBlockHash = await send("transfer", paymentAddresses[1]!, 3_000_000n);
    forkBlock = (await publicClient.getTransactionReceipt({ hash: inForkBlockHash })).blockNumber;
    expect(await publicClient.getBlockNumber({ cacheTime: 0 })).toBe(forkBlock);
    // After the fork block: the fork must not see this one.
    postForkHash = await send("transfer", paymentAddresses[0]!, 11_000_000n);

    forkUrl = `${upstream.rpcUrl}/?apikey=Secret123key`;
    start = runStart({
      DATA_DIR: dataDir,
      FORK_URL: forkUrl,
      FORK_BLOCK_NUMBER: forkBlock.toString(),
      // Base's 10 confirmations at one block a second.
      BLOCK_TIME: "1",
      // Ponder's log too, for a failure's message.
      VERBOSE: "1",
      ANVIL_PORT: String(await findFreePort()),
      PORT: String(await findFreePort()),
    });
    await waitFor(
      async () => {
        if (start.child.exitCode !== null) throw new Error(`npm start exited:\n${start.output()}`);
        return start.output().includes("Ctrl-C stops the stack") ? true : undefined;
      },
      { timeoutMs: 170_000, intervalMs: 200, what: "the fork stack's banner" },
    );
    local = JSON.parse(readFileSync(join(dataDir, "local.json"), "utf8"));
  });

  afterAll(async () => {
    if (process.env.FORK_TEST_LOG) (await import("node:fs")).writeFileSync(process.env.FORK_TEST_LOG, start?.output() ?? "");
    if (start !== undefined && start.child.exitCode === null) {
      start.child.kill("SIGTERM");
      await start.exited;
    }
    await upstream?.stop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
  });

  const partnerFetch = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    fetch(`${local.baseUrl}${path}`, {
      ...init,
      headers: { Authorization: `Bearer ${local.partner.apiKey}`, "Content-Type": "application/json" },
      body: init.json === undefined ? init.body : JSON.stringify(init.json),
    });

  it("writes local.json as in plain mode, on network base with its canonical USDC, plus the fork", async () => {
    expect(Object.keys(local).sort()).toEqual(
      ["accounts", "admin", "baseUrl", "chainId", "contracts", "fork", "network", "partner", "rpcUrl"].sort(),
    );
    expect(local).toMatchObject({
      network: "base",
      chainId: 8453,
      fork: { url: forkUrl, blockNumber: Number(forkBlock) },
    });
    expect(getAddress(local.contracts.usdc)).toBe(BASE_USDC);
    expect(local.partner.paymentAddress).toBe(paymentAddresses[0]);
    expect(local.accounts).toHaveLength(10);
    expect(start.output()).toContain(`Anvil fork of base at block ${forkBlock} from ${upstream.rpcUrl}`);
    expect(start.output()).not.toContain("Secret123key");

    const fork = clientsOf(local.rpcUrl, 8453);
    expect(await fork.publicClient.getChainId()).toBe(8453);
    const certificateCode = await fork.publicClient.getCode({ address: local.contracts.certificate as Address });
    expect(certificateCode?.length ?? 0).toBeGreaterThan(2);
    expect(
      await fork.publicClient.getCode({ address: local.contracts.certificate as Address, blockNumber: forkBlock }),
    ).toBeUndefined();

    const health = await (await fetch(`${local.baseUrl}/v1/health`)).json();
    expect(health.chains).toEqual([expect.objectContaining({ network: "base", chainId: 8453 })]);
  });

  it("funded every test account with fork USDC through the token's master minter, leaving the upstream alone", async () => {
    const fork = clientsOf(local.rpcUrl, 8453);
    const upstreamClient = clientsOf(upstream.rpcUrl, 8453).publicClient;
    for (const account of accounts.slice(0, 9)) {
      expect(
        await fork.publicClient.readContract({
          address: BASE_USDC,
          abi: testUsdcAbi,
          functionName: "balanceOf",
          args: [account.address],
        }),
      ).toBe(USDC_PER_ACCOUNT);
    }
    const read = (client: typeof upstreamClient, functionName: "isMinter", who: Address) =>
      client.readContract({ address: BASE_USDC, abi: testUsdcAbi, functionName, args: [who] });
    expect(await fork.publicClient.readContract({ address: BASE_USDC, abi: testUsdcAbi, functionName: "masterMinter" })).toBe(
      circleMasterMinter,
    );
    expect(await read(fork.publicClient, "isMinter", accounts[0]!.address)).toBe(true);
    expect(await read(upstreamClient, "isMinter", accounts[0]!.address)).toBe(false);
    expect(
      await upstreamClient.readContract({
        address: BASE_USDC,
        abi: testUsdcAbi,
        functionName: "balanceOf",
        args: [accounts[1]!.address],
      }),
    ).toBe(0n);
  });

  it("holds the upstream's history up to the fork block and nothing after it", async () => {
    const fork = clientsOf(local.rpcUrl, 8453).publicClient;
    for (const hash of preForkHashes) expect((await fork.getTransactionReceipt({ hash })).status).toBe("success");
    await expect(fork.getTransactionReceipt({ hash: postForkHash })).rejects.toThrow();
    expect(
      await fork.readContract({ address: BASE_USDC, abi: testUsdcAbi, functionName: "balanceOf", args: [paymentAddresses[0]!] }),
    ).toBe(5_000_000n);
  });

  it("settles a session on network base paid with fork USDC, and never indexes the history before the fork", async () => {
    const created = await partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: sessionBody({ network: "base", certificate: { enabled: false } }),
    });
    expect(created.status).toBe(201);
    const session = await created.json();
    expect(session).toMatchObject({ network: "base", chainId: 8453 });
    expect(getAddress(session.payment.tokenAddress)).toBe(BASE_USDC);

    const fork = clientsOf(local.rpcUrl, 8453);
    const hash = await fork.wallet(local.accounts[1]!.privateKey as Hex).writeContract({
      address: BASE_USDC,
      abi: testUsdcAbi,
      functionName: "transfer",
      args: [session.payment.recipient, BigInt(session.payment.amount)],
    });
    const receipt = await fork.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.blockNumber).toBeGreaterThan(forkBlock);

    const settled = await waitFor(
      async () => {
        if (start.child.exitCode !== null) throw new Error(`npm start exited:\n${start.output().slice(-4000)}`);
        const current = await (await partnerFetch(`/v1/checkout/sessions/${session.id}`)).json();
        return current.status === "settled" ? current : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: "the session to settle on the fork" },
    );
    expect(settled.status).toBe("settled");
    // Base's confirmation count applies on its fork: the head is at least 10 blocks on.
    const head = await fork.publicClient.getBlockNumber({ cacheTime: 0 });
    expect(head - receipt.blockNumber + 1n).toBeGreaterThanOrEqual(BigInt(KNOWN_NETWORKS.base.defaultConfirmations));

    const transfers = (await (await partnerFetch("/v1/transfers?network=base")).json()).data as {
      transactionHash: string;
      blockNumber: string;
    }[];
    expect(transfers.map((transfer) => transfer.transactionHash)).toEqual([hash]);
    for (const preFork of [...preForkHashes, inForkBlockHash])
      expect(transfers.some((transfer) => transfer.transactionHash === preFork)).toBe(false);
    const unresolved = (await (await partnerFetch("/v1/payments?status=unresolved")).json()).data as {
      transactionHash: string;
    }[];
    expect(unresolved.filter((payment) => [...preForkHashes, inForkBlockHash].includes(payment.transactionHash as Hex))).toEqual(
      [],
    );
  });

  it("reports a lag of zero or more blocks in health, never -1, while the fork mines every second", async () => {
    for (let sample = 0; sample < 8; sample++) {
      const health = await (await fetch(`${local.baseUrl}/v1/health`)).json();
      const chain = health.chains[0] as { lagBlocks: number | null; indexedBlock: string; chainHead: string };
      expect(chain.lagBlocks).not.toBeNull();
      expect(chain.lagBlocks).toBeGreaterThanOrEqual(0);
      expect(BigInt(chain.chainHead)).toBeGreaterThanOrEqual(BigInt(chain.indexedBlock));
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
  });

  it("takes test payments as locally: the hosted page's button, and npm run pay with the fork's USDC", async () => {
    const created = await partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: sessionBody({ network: "base", certificate: { enabled: false }, externalOrderId: "fork-test-pay" }),
    });
    const session = await created.json();
    // The hosted page offers the button on the fork.
    const view = await (
      await fetch(`${local.baseUrl}/v1/public/checkout/sessions/${session.id}/validate`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ clientToken: session.clientToken }),
      })
    ).json();
    expect(view.testPayments).toBe(true);
    const clicked = await fetch(`${local.baseUrl}/v1/public/checkout/sessions/${session.id}/test-payment`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ clientToken: session.clientToken }),
    });
    const answer = await clicked.json();
    expect(clicked.status, JSON.stringify(answer)).toBe(200);
    expect(answer.submission).toMatchObject({ status: expect.stringMatching(/^(payment_pending|settled)$/) });
    const fork = clientsOf(local.rpcUrl, 8453).publicClient;
    const receipt = await fork.getTransactionReceipt({ hash: answer.transactionHash });
    expect(receipt.status).toBe("success");
    expect(getAddress(receipt.to as Address)).toBe(BASE_USDC);
    await waitFor(
      async () => {
        const current = await (await partnerFetch(`/v1/checkout/sessions/${session.id}`)).json();
        return current.status === "settled" ? true : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: "the test payment to settle on the fork" },
    );

    // `npm run pay -- <sessionId>` from a terminal, reading the fork's local.json.
    const second = await (
      await partnerFetch("/v1/checkout/sessions", {
        method: "POST",
        json: sessionBody({ network: "base", certificate: { enabled: false }, externalOrderId: "fork-npm-pay" }),
      })
    ).json();
    const pay = spawn(
      process.execPath,
      [join(PROJECT_ROOT, "node_modules", "tsx", "dist", "cli.mjs"), "scripts/pay.ts", second.id, "--no-submit"],
      { cwd: PROJECT_ROOT, env: { ...process.env, DATA_DIR: dataDir }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let printed = "";
    pay.stdout?.on("data", (chunk: Buffer) => {
      printed += chunk.toString();
    });
    pay.stderr?.on("data", (chunk: Buffer) => {
      printed += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => pay.once("exit", resolve));
    expect(code, printed).toBe(0);
    expect(printed).toMatch(/sent \d+ base units from 0x[0-9a-fA-F]{40}: 0x[0-9a-f]{64}/);
    expect(printed).toContain("hash not submitted");
  });

  it("runs scenario triggers on the fork: a duplicate payment in the real token, and an outage of the fork's Anvil (pid from npm start's lock)", {
    timeout: 240_000,
  }, async () => {
    const duplicate = await simulate({ local, dataDir, scenario: "duplicate" });
    expect(duplicate.events.map((event) => event.type)).toEqual(["purchase.settled", "payment.unresolved"]);
    expect(duplicate.events[0]?.data).toMatchObject({ network: "base", tokenAddress: BASE_USDC });
    expect(duplicate.events[0]?.data.confirmations).toBeGreaterThanOrEqual(10);
    expect(duplicate.events[1]?.data.reason).toBe("duplicate_payment");
    const outage = await simulate({ local, dataDir, scenario: "outage", outageMs: 4_000 });
    expect(outage.steps.join("\n")).toMatch(/stopped the node \(SIGSTOP of Anvil, pid \d+\)/);
    expect(outage.events.map((event) => event.type)).toEqual(["purchase.settled"]);
  });

  it("subscribes on the fork: the manager deployed there, signatures only, the first charge in the fork's USDC", {
    timeout: 240_000,
  }, async () => {
    const fork = clientsOf(local.rpcUrl, 8453).publicClient;
    const manager = local.contracts.subscriptionManager as Address;
    expect((await fork.getCode({ address: manager }))?.length ?? 0).toBeGreaterThan(2);
    expect(await fork.getCode({ address: manager, blockNumber: forkBlock })).toBeUndefined();

    const result = await simulateSubscription({ local, scenario: "subscription" });
    expect(result.events.map((event) => event.type)).toEqual(["subscription.activated", "subscription.charged"]);
    const charged = result.events[1]!.data;
    expect(charged).toMatchObject({ chainId: 8453, periodIndex: 0, amount: "2000000" });
    // The charge is a transfer of Base's USDC (the fork's copy) from the customer to the partner,
    // through the manager deployed on the fork, sent by the service's relayer.
    const receipt = await fork.getTransactionReceipt({ hash: charged.transactionHash as Hex });
    expect(receipt.status).toBe("success");
    expect(receipt.blockNumber).toBeGreaterThan(forkBlock);
    expect(getAddress(receipt.to as Address)).toBe(getAddress(manager));
    const transfer = receipt.logs.find((log) => getAddress(log.address) === BASE_USDC);
    expect(transfer).toBeDefined();
    expect(getAddress(`0x${transfer!.topics[1]!.slice(26)}`)).toBe(getAddress(result.subscriber));
    expect(getAddress(`0x${transfer!.topics[2]!.slice(26)}`)).toBe(getAddress(local.partner.paymentAddress));
    // Base's confirmation count applies: the charge is paid only once 10 blocks deep.
    const head = await fork.getBlockNumber({ cacheTime: 0 });
    expect(head - receipt.blockNumber + 1n).toBeGreaterThanOrEqual(BigInt(KNOWN_NETWORKS.base.defaultConfirmations));
    expect(await fork.getBalance({ address: result.subscriber })).toBe(0n);
    const read = await (await partnerFetch(`/v1/subscriptions/${result.subscriptionId}`)).json();
    expect(read).toMatchObject({ status: "active", chainId: 8453 });
    expect(getAddress(read.token)).toBe(BASE_USDC);
    expect(read.charges).toEqual([expect.objectContaining({ periodIndex: 0, status: "paid", orderId: charged.orderId })]);
  });

  it("when the upstream dies and Anvil exits, names the fork's upstream (redacted) and shows Anvil's last lines", async () => {
    await upstream.stop();
    const code = await Promise.race([
      start.exited,
      new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), 60_000)),
    ]);
    expect(code, start.output().slice(-3000)).toBe(1);
    const output = start.output();
    const said = output.slice(output.indexOf("the chain (an Anvil fork of"));
    expect(said).toContain(`the chain (an Anvil fork of ${upstream.rpcUrl}) exited`);
    expect(said).toContain("Anvil's last lines:");
    // Anvil's own words: its panic names what it could not fetch from the upstream.
    expect(said).toMatch(/panicked|error sending request|Connection refused/);
    expect(output).not.toContain("Secret123key");
    expect(said).not.toContain("BACKTRACE");
  });
});

describe("fork mode refusals", () => {
  const started: AnvilInstance[] = [];
  let dataDir: string;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), "fork-refusals-"));
  });
  afterAll(async () => {
    for (const anvil of started) await anvil.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The refusal as `startLocalStack` (what `npm start` runs) throws it, and whether Anvil was left running. */
  async function startRefused(forkUrl: string) {
    const anvilPort = await findFreePort();
    const error = await startLocalStack({ dataDir, anvilPort, fork: { url: forkUrl } }).then(
      (stack) => {
        void stack.stop();
        throw new Error("the fork stack started");
      },
      (refusal: Error) => refusal,
    );
    return { name: error.name, output: error.message, anvilListening: await isListening(anvilPort) };
  }

  it("refuses a fork URL that does not answer, in words, before starting anything", { timeout: 120_000 }, async () => {
    const closed = await findFreePort();
    const anvilPort = await findFreePort();
    const run = runStart({
      DATA_DIR: dataDir,
      FORK_URL: `http://127.0.0.1:${closed}/v2/secret-api-key`,
      ANVIL_PORT: String(anvilPort),
      PORT: String(await findFreePort()),
    });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(`npm start: FORK_URL http://127.0.0.1:${closed}/v2/… does not answer`);
    expect(run.output()).not.toContain("secret-api-key");
    expect(run.output()).not.toContain("    at ");
    expect(await isListening(anvilPort)).toBe(false);
    expect(existsSync(join(dataDir, "local.json"))).toBe(false);
    expect(existsSync(join(dataDir, "stack.lock.json"))).toBe(false);
  });

  it("refuses a chain id the service does not settle on, and a fork block ahead of the head", async () => {
    const optimism = await startAnvil({ chainId: 10 });
    started.push(optimism);
    const result = await startRefused(optimism.rpcUrl);
    expect(result.name).toBe("ForkError");
    expect(result.output).toContain("answers chain id 10, which is not a chain the service settles on");
    expect(result.output).toContain("base (8453), base-sepolia (84532)");
    expect(result.anvilListening).toBe(false);

    await expect(resolveForkTarget({ url: "ftp://base.example/" })).rejects.toThrow(
      "FORK_URL must be an http:// or https:// RPC URL",
    );
    const base = await startAnvil({ chainId: 8453 });
    started.push(base);
    await expect(resolveForkTarget({ url: base.rpcUrl, blockNumber: 1_000 })).rejects.toThrow(
      "FORK_BLOCK_NUMBER 1000 is ahead of base's head (0)",
    );
  });

  it("says clearly when the fork's USDC has no master minter to fund the accounts with, and stops the fork", async () => {
    const sepolia = await startAnvil({ chainId: 84532 });
    started.push(sepolia);
    const { publicClient, testClient } = clientsOf(sepolia.rpcUrl, 84532);

    const empty = await startRefused(sepolia.rpcUrl);
    expect(empty.name).toBe("ForkError");
    expect(empty.output).toContain(`Cannot fund the test accounts with the fork's USDC at ${BASE_SEPOLIA_USDC}`);
    expect(empty.output).toContain("there is no contract at that address on the fork");
    expect(empty.anvilListening).toBe(false);

    // A contract without the FiatToken minter role at the canonical address.
    const { certificate } = await deployCertificate({
      rpcUrl: sepolia.rpcUrl,
      chainId: 84532,
      deployerPrivateKey: key(0),
      voucherSigner: accounts[1]!.address,
    });
    await testClient.setCode({
      address: BASE_SEPOLIA_USDC,
      bytecode: (await publicClient.getCode({ address: certificate })) as Hex,
    });
    const noRole = await startRefused(sepolia.rpcUrl);
    expect(noRole.name).toBe("ForkError");
    expect(noRole.output).toContain("the token has no masterMinter() role");
    expect(noRole.anvilListening).toBe(false);
    expect(existsSync(join(dataDir, "local.json"))).toBe(false);
  });
});

describe("TestUSDC's FiatToken-style minter role", () => {
  let chain: AnvilInstance;
  const masterMinterKey = generatePrivateKey();
  const token = "0x00000000000000000000000000000000000Ab0C1" as Address;

  beforeAll(async () => {
    chain = await startAnvil({ chainId: 8453 });
    await placeTokenAt(chain, token, addressOf(masterMinterKey));
    await clientsOf(chain.rpcUrl, 8453).testClient.setBalance({ address: addressOf(masterMinterKey), value: 10n ** 18n });
  });
  afterAll(async () => {
    await chain?.stop();
  });

  it("lets only the master minter configure minters, and minters mint only within their allowance", async () => {
    const { publicClient, wallet } = clientsOf(chain.rpcUrl, 8453);
    const write = (
      privateKey: Hex,
      functionName: "configureMinter" | "mint" | "initializeMinterRole",
      args: readonly unknown[],
    ) =>
      // biome-ignore lint/suspicious/noExplicitAny: one helper for three functions of the ABI
      wallet(privateKey).writeContract({ address: token, abi: testUsdcAbi, functionName, args } as any);

    expect(await revertReason(write(key(3), "initializeMinterRole", [accounts[3]!.address]))).toBe(
      "FiatToken: minter role already initialized",
    );
    expect(await revertReason(write(key(3), "configureMinter", [accounts[3]!.address, 10n]))).toBe(
      "FiatToken: caller is not the masterMinter",
    );
    expect(await revertReason(write(key(3), "mint", [accounts[3]!.address, 1n]))).toBe("FiatToken: caller is not a minter");

    await publicClient.waitForTransactionReceipt({
      hash: await write(masterMinterKey, "configureMinter", [accounts[3]!.address, 10n]),
    });
    await publicClient.waitForTransactionReceipt({ hash: await write(key(3), "mint", [accounts[4]!.address, 6n]) });
    expect(
      await publicClient.readContract({
        address: token,
        abi: testUsdcAbi,
        functionName: "minterAllowance",
        args: [accounts[3]!.address],
      }),
    ).toBe(4n);
    expect(await revertReason(write(key(3), "mint", [accounts[4]!.address, 5n]))).toBe(
      "FiatToken: mint amount exceeds minterAllowance",
    );
    expect(
      await publicClient.readContract({
        address: token,
        abi: testUsdcAbi,
        functionName: "balanceOf",
        args: [accounts[4]!.address],
      }),
    ).toBe(6n);
  });
});
