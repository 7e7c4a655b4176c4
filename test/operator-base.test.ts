import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testUsdcAbi } from "../contracts/generated/index.js";
import { type AnvilInstance, startAnvil } from "../local/anvil.js";
import { deployTestUsdc, localChain } from "../local/deploy.js";
import { anvilAccounts } from "../local/local-secrets.js";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { type PonderProcess, startPonder } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { sessionBody } from "./support/checkout-helpers.js";
import { settlement } from "./support/operator-cli.js";
import { createTestDatabase, type TestDatabase, waitFor } from "./support/test-stack.js";

// The service in its non-local configuration, as docs/deploy.md runs it: NETWORKS=base
// against a chain whose id is Base's (an Anvil with --chain-id 8453 and the project's
// own token at BASE_USDC_ADDRESS), our state and Ponder's index on a PostgreSQL server,
// LOCAL_MODE off, and the partner, its key and its addresses made with the CLI only.
const CHAIN_ID = 8453;
const [deployer, payer] = anvilAccounts(2) as [{ address: Hex; privateKey: Hex }, { address: Hex; privateKey: Hex }];
const shopAddress = privateKeyToAccount(`0x${"11".repeat(32)}`).address;
const laterAddress = privateKeyToAccount(`0x${"22".repeat(32)}`).address;

let anvil: AnvilInstance;
let storeDatabase: TestDatabase;
let indexDatabase: TestDatabase;
let directory: string;
let env: NodeJS.ProcessEnv;
let service: PonderProcess | undefined;
let usdc: Address;

const wallet = () =>
  createWalletClient({
    chain: localChain({ rpcUrl: anvil.rpcUrl, chainId: CHAIN_ID }),
    transport: http(anvil.rpcUrl),
    account: privateKeyToAccount(payer.privateKey),
  });

async function pay(to: Address, amount: bigint): Promise<Hex> {
  const hash = await wallet().writeContract({ address: usdc, abi: testUsdcAbi, functionName: "transfer", args: [to, amount] });
  await createPublicClient({ transport: http(anvil.rpcUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 });
  return hash;
}

async function startService(): Promise<PonderProcess> {
  service = await startPonder({ root: PROJECT_ROOT, port: await findFreePort(), env, readyTimeoutMs: 180_000 });
  return service;
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: CHAIN_ID });
  usdc = await deployTestUsdc({ rpcUrl: anvil.rpcUrl, chainId: CHAIN_ID, deployerPrivateKey: deployer.privateKey });
  const owner = createWalletClient({
    chain: localChain({ rpcUrl: anvil.rpcUrl, chainId: CHAIN_ID }),
    transport: http(anvil.rpcUrl),
    account: privateKeyToAccount(deployer.privateKey),
  });
  await owner.writeContract({ address: usdc, abi: testUsdcAbi, functionName: "mint", args: [payer.address, 10n ** 12n] });
  storeDatabase = await createTestDatabase();
  indexDatabase = await createTestDatabase();
  directory = mkdtempSync(join(tmpdir(), "settlement-operator-"));
  env = {
    NETWORKS: "base",
    BASE_RPC_URL: anvil.rpcUrl,
    BASE_USDC_ADDRESS: usdc,
    BASE_START_BLOCK: "0",
    BASE_CONFIRMATIONS: "1",
    BASE_POLLING_INTERVAL_MS: "100",
    STORE_URL: storeDatabase.url,
    DATABASE_URL: indexDatabase.url,
    DATA_DIR: join(directory, "data"),
    SECRETS_KEY_FILE: join(directory, "secrets.key"),
    PUBLIC_BASE_URL: "https://pay.example.com",
  };
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await anvil?.stop();
  await storeDatabase?.drop();
  await indexDatabase?.drop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

describe("operating the service on Base (chain 8453) with the CLI only", { timeout: 600_000 }, () => {
  let apiKey: string;
  let partnerId: string;

  it("checks the configuration, generates the key file, creates partner, key and address on Postgres", async () => {
    // Every problem at once: the key file is missing and the store holds no address yet.
    const missing = await settlement(["config", "check", "--json"], env);
    expect(missing.code).toBe(78);
    expect(missing.json().problems).toEqual([
      expect.stringContaining("SECRETS_KEY_FILE: cannot read"),
      expect.stringContaining('No payment address for network "base"'),
    ]);

    const generated = await settlement(["secrets", "generate", env.SECRETS_KEY_FILE as string, "--json"], env);
    expect(generated.code).toBe(0);
    expect((await settlement(["secrets", "generate", env.SECRETS_KEY_FILE as string], env)).code).toBe(1);

    const empty = await settlement(["config", "check", "--json"], env);
    expect(empty.json().problems).toEqual([expect.stringContaining('No payment address for network "base"')]);

    const created = await settlement(["partner", "create", "--name", "Base shop", "--json"], env);
    expect(created.code).toBe(0);
    partnerId = created.json().partner.id;
    apiKey = created.json().apiKey.apiKey;
    expect(apiKey).toMatch(/^sk_live_/);
    const spare = await settlement(["api-key", "create", "--partner", partnerId, "--json"], env);
    expect(spare.code).toBe(0);
    expect((await settlement(["api-key", "revoke", spare.json().apiKey.id], env)).code).toBe(0);

    const added = await settlement(
      ["payment-address", "add", "--partner", partnerId, "--network", "base", shopAddress, "--json"],
      env,
    );
    expect(added.code).toBe(0);
    expect(added.json()).toMatchObject({ address: shopAddress, network: "base", chainId: CHAIN_ID, watching: false });
    const refused = await settlement(
      ["payment-address", "add", "--partner", partnerId, "--network", "base-sepolia", shopAddress],
      env,
    );
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("unsupported_network")]);

    const checked = await settlement(["config", "check", "--json"], env);
    expect(checked.code).toBe(0);
    expect(checked.json().networks).toEqual([
      expect.objectContaining({ name: "base", chainId: CHAIN_ID, paymentAddresses: [shopAddress] }),
    ]);
  });

  it("starts with the store's address watched and settles a payment", async () => {
    const ponder = await startService();
    const listed = await settlement(["payment-address", "list", "--json"], env);
    expect(listed.json().paymentAddresses).toEqual([expect.objectContaining({ address: shopAddress, watching: true })]);

    const created = await fetch(`${ponder.baseUrl}/v1/checkout/sessions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify(sessionBody({ certificate: { enabled: false }, network: "base" })),
    });
    expect(created.status).toBe(201);
    const session = await created.json();
    expect(session).toMatchObject({ network: "base", chainId: CHAIN_ID });
    await pay(session.payment.recipient, BigInt(session.payment.amount));
    await waitFor(
      async () => {
        const read = await fetch(`${ponder.baseUrl}/v1/checkout/sessions/${session.id}`, {
          headers: { Authorization: `Bearer ${apiKey}` },
        });
        return ((await read.json()) as { status: string }).status === "settled" ? true : undefined;
      },
      { timeoutMs: 30_000, what: "the session to settle" },
    );
  });

  it("reports an address added at run time as not watched until the indexer restarts, then finds its payments", async () => {
    const added = await settlement(
      ["payment-address", "add", "--partner", partnerId, "--network", "base", laterAddress, "--json"],
      env,
    );
    expect(added.json()).toMatchObject({ address: laterAddress, watching: false });
    const health = await (await fetch(`${service!.baseUrl}/v1/health`)).json();
    expect(health.chains[0]).toMatchObject({ network: "base", watchedAddresses: 1, addressesAwaitingRestart: 1 });
    // Paid before the restart: the restarted indexer reads it from the start block on.
    const early = await pay(laterAddress, 4_321n);

    await service!.stop();
    const ponder = await startService();
    const listed = await settlement(["payment-address", "list", "--partner", partnerId, "--json"], env);
    expect(listed.json().paymentAddresses.map((row: { watching: boolean }) => row.watching)).toEqual([true, true]);
    const after = await (await fetch(`${ponder.baseUrl}/v1/health`)).json();
    expect(after.chains[0]).toMatchObject({ watchedAddresses: 2, addressesAwaitingRestart: 0 });
    const unresolved = await waitFor(
      async () => {
        const page = await (
          await fetch(`${ponder.baseUrl}/v1/payments?status=unresolved`, { headers: { Authorization: `Bearer ${apiKey}` } })
        ).json();
        return page.data.find((payment: { transactionHash: string }) => payment.transactionHash === early);
      },
      { timeoutMs: 30_000, what: "the early payment as unresolved" },
    );
    expect(unresolved).toMatchObject({ amount: "4321" });
  });

  it("records every CLI action in the audit log as actor operator", async () => {
    const pg = (await import("pg")).default;
    const client = new pg.Client(storeDatabase.url);
    await client.connect();
    try {
      const rows = (await client.query("select actor_role, actor_address, action from audit_log order by seq")).rows;
      expect(rows.map((row) => row.action)).toEqual([
        "partner.create",
        "partner.api_key.create",
        "partner.api_key.revoke",
        "partner.payment_address.add",
        "partner.payment_address.add",
      ]);
      expect(new Set(rows.map((row) => `${row.actor_role}/${row.actor_address}`))).toEqual(new Set(["operator/operator"]));
    } finally {
      await client.end();
    }
  });
});
