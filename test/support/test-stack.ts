import { randomUUID } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  type Hex,
  http,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type LocalStack, startLocalStack } from "../../local/local-stack.js";
import { createDatabase, dropDatabase, startPostgresServer } from "../../local/postgres-server.js";
import { POSTGRES_SERVER_FILE, TEST_RUN_DIRECTORY } from "./global-setup.js";

export type TestStack = LocalStack & {
  chain: ReturnType<typeof defineChain>;
  publicClient: ReturnType<typeof createPublicClient>;
  testClient: ReturnType<typeof createTestClient>;
  wallet: (accountIndex: number) => ReturnType<typeof createWalletClient>;
  /** Sends `amount` base units of the stack's USDC and waits for the receipt. */
  payUsdc: (params: {
    from: number;
    to: Address;
    amount: bigint;
    token?: Address;
  }) => Promise<{ hash: Hex; blockNumber: bigint }>;
  /**
   * Replaces the last `depth` blocks (Anvil's `anvil_reorg`, which may re-include the given
   * signed transactions) and sets Anvil's clock back to the machine's. Anvil stamps the
   * replacement blocks with the old ones' times and its next blocks stay that far behind the
   * machine's clock for the rest of the run, so a session created later would see a payment
   * mined after it as older than itself (`predates_session`): a chain that never runs late.
   */
  reorg: (depth: number, transactions?: [Hex, number][]) => Promise<void>;
  /** fetch against the service with the demo partner's API key. */
  partnerFetch: (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;
};

/**
 * One real local stack (Anvil + contracts + indexer + API) in a throw-away data directory.
 *
 * Where the index lives, `index`:
 * - `server` (the default): a new database on the run's PostgreSQL server (global-setup.ts),
 *   as an operator on Base runs it (DATABASE_URL). Our own state stays in SQLite.
 * - `embedded`: PGlite in the data directory, what `npm start` runs. The files that test
 *   the embedded default itself (its restart cache, a newcomer's first run) ask for it;
 *   it costs every start of the service 3 to 4 s more CPU.
 */
export async function startTestStack(
  options: {
    env?: NodeJS.ProcessEnv;
    blockTime?: number;
    genesisTimestamp?: number;
    dataDir?: string;
    anvilPort?: number;
    index?: "server" | "embedded";
  } = {},
): Promise<TestStack> {
  const dataDir = options.dataDir ?? newDataDir();
  const indexDatabase =
    (options.index ?? "server") === "server" && options.env?.DATABASE_URL === undefined ? await createTestDatabase() : undefined;
  const stack = await startLocalStack({
    dataDir,
    // An empty embedded index made once for the run: PGlite's initdb, not repeated per stack.
    emptyIndexTemplate:
      indexDatabase === undefined && options.env?.DATABASE_URL === undefined ? await emptyIndexTemplate() : undefined,
    ...options,
    env: { ...(indexDatabase === undefined ? {} : { DATABASE_URL: indexDatabase.url }), ...options.env },
  }).catch(async (error) => {
    await indexDatabase?.drop();
    throw error;
  });
  const chain = defineChain({
    id: stack.local.chainId,
    name: "Anvil",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [stack.local.rpcUrl] } },
  });
  const stopStack = stack.stop;
  const publicClient = createPublicClient({ chain, transport: http(stack.local.rpcUrl), pollingInterval: 50 });
  const testClient = createTestClient({ chain, mode: "anvil", transport: http(stack.local.rpcUrl) });
  const wallet = (accountIndex: number) => {
    const account = stack.local.accounts[accountIndex];
    if (account === undefined) throw new Error(`no account ${accountIndex}`);
    return createWalletClient({
      chain,
      account: privateKeyToAccount(account.privateKey as Hex),
      transport: http(stack.local.rpcUrl),
    });
  };

  const testStack = Object.assign(stack, {
    chain,
    publicClient,
    testClient,
    wallet,
    async payUsdc({ from, to, amount, token }: { from: number; to: Address; amount: bigint; token?: Address }) {
      const hash = await wallet(from).writeContract({
        address: token ?? (stack.local.contracts.usdc as Address),
        abi: erc20Abi,
        functionName: "transfer",
        args: [to, amount],
        chain,
        account: wallet(from).account!,
      });
      const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      return { hash, blockNumber: receipt.blockNumber };
    },
    async reorg(depth: number, transactions: [Hex, number][] = []) {
      await testClient.request({ method: "anvil_reorg" as never, params: [depth, transactions] as never });
      await testClient.request({ method: "evm_setTime" as never, params: [Math.floor(Date.now() / 1000)] as never });
    },
    partnerFetch(path: string, init: RequestInit & { json?: unknown } = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has("Authorization")) headers.set("Authorization", `Bearer ${stack.local.partner.apiKey}`);
      if (init.json !== undefined) headers.set("Content-Type", "application/json");
      return fetch(`${stack.ponder.baseUrl}${path}`, {
        ...init,
        headers,
        body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
      });
    },
    async stop() {
      // Ponder's log outlives the run (test-artifacts/, not committed): a stall seen
      // only under CI's load can then be read afterwards.
      const logDir = join(process.cwd(), "test-artifacts", "ponder");
      mkdirSync(logDir, { recursive: true });
      writeFileSync(join(logDir, `${basename(dataDir)}.log`), stack.ponder.output());
      liveStacks.delete(testStack);
      await stopStack();
      // So is the store as the service left it (beside the log, same name): what the workers
      // recorded, for a failure seen only under load. SQLite's WAL goes with it.
      for (const suffix of ["", "-wal"]) {
        const file = join(dataDir, `app.sqlite${suffix}`);
        if (existsSync(file)) copyFileSync(file, join(logDir, `${basename(dataDir)}.sqlite${suffix}`));
      }
      await indexDatabase?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  });
  liveStacks.add(testStack);
  return testStack;
}

/** The stacks this test file started and has not stopped: what a timed-out wait describes. */
const liveStacks = new Set<TestStack>();

/**
 * What the service saw when a wait ran out: the chain's head, the indexed head and the
 * workers' state from `/v1/health`, and the end of Ponder's log. A condition that
 * never came on a loaded CI machine is then diagnosable from the failure message alone.
 */
async function describeLiveStacks(): Promise<string> {
  const parts: string[] = [];
  for (const stack of liveStacks) {
    const chainHead = await stack.publicClient.getBlockNumber().then(String, (error: Error) => `unreadable (${error.message})`);
    const health = await fetch(`${stack.ponder.baseUrl}/v1/health`, { signal: AbortSignal.timeout(5_000) })
      .then((response) => response.text())
      .catch((error: Error) => `unreadable (${error.message})`);
    const log = stack.ponder
      .output()
      .split("\n")
      .filter((line) => line.trim() !== "")
      .slice(-25)
      .map((line) => line.slice(0, 400))
      .join("\n");
    // How the service decided the latest transfers it recorded (a settlement that never came shows here).
    const payments = await stack
      .partnerFetch("/v1/payments?limit=10")
      .then((response) => response.text())
      .catch((error: Error) => `unreadable (${error.message})`);
    parts.push(
      `chain head ${chainHead}\nhealth ${health.slice(0, 3_000)}\npayments ${payments.slice(0, 3_000)}\nservice log (last lines):\n${log}`,
    );
  }
  return parts.join("\n---\n");
}

export type TestDatabase = { url: string; drop: () => Promise<void> };

/** A new, empty database on the run's PostgreSQL server: a stack's index, or a store on Postgres. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = await runPostgresServer();
  const name = `test_${randomUUID().replaceAll("-", "")}`;
  return { url: await createDatabase(serverUrl, name), drop: () => dropDatabase(serverUrl, name) };
}

/**
 * The run's one PostgreSQL server (local/postgres-server.ts), started by the first stack of the
 * run that asks; the global teardown stops it. Each stack's index gets a database of its own
 * there: Postgres in WebAssembly costs a stack 3 to 4 s of CPU at every start, a server database
 * nothing.
 */
async function runPostgresServer(): Promise<string> {
  const file = await madeOnce(POSTGRES_SERVER_FILE, async (part) => {
    const server = await startPostgresServer();
    writeFileSync(part, JSON.stringify({ url: server.url, directory: server.directory }));
  });
  return (JSON.parse(readFileSync(file, "utf8")) as { url: string }).url;
}

/** An empty embedded index (PGlite), made once for the run; each stack that embeds its index copies it. */
function emptyIndexTemplate(): Promise<string> {
  return madeOnce("empty-index", async (part) => {
    const { PGlite } = await import("@electric-sql/pglite");
    const database = new PGlite(part);
    await database.waitReady;
    await database.close();
  });
}

/**
 * `name` in the run's folder (global-setup.ts), made by the first test worker that asks: `make`
 * writes it under another name, renamed into place when whole. The run's other worker waits for
 * it, and a failure is written beside it for that worker to throw too.
 */
async function madeOnce(name: string, make: (part: string) => Promise<void>): Promise<string> {
  const runDirectory = process.env[TEST_RUN_DIRECTORY];
  if (runDirectory === undefined)
    throw new Error(`${TEST_RUN_DIRECTORY} is not set: run the tests with vitest (its global setup makes the run's folder)`);
  const path = join(runDirectory, name);
  const failed = `${path}.failed`;
  let claimed = true;
  try {
    mkdirSync(`${path}.claimed`);
  } catch {
    claimed = false;
  }
  if (claimed) {
    try {
      await make(`${path}.part`);
      renameSync(`${path}.part`, path);
    } catch (error) {
      writeFileSync(failed, `${name} could not be made: ${(error as Error).message}`);
      throw error;
    }
  } else {
    // initdb under a loaded machine took 35 s in one measure: well within this.
    await waitFor(async () => (existsSync(path) || existsSync(failed) ? true : undefined), {
      what: `${name}, made by the run's other test worker`,
      timeoutMs: 170_000,
    });
    if (!existsSync(path)) throw new Error(readFileSync(failed, "utf8"));
  }
  return path;
}

export function newDataDir(): string {
  return mkdtempSync(join(tmpdir(), "settlement-test-"));
}

/** Polls `probe` until it returns a value other than undefined. */
export async function waitFor<value>(
  probe: () => Promise<value | undefined>,
  { timeoutMs = 30_000, intervalMs = 50, what = "condition" } = {},
): Promise<value> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const state = await describeLiveStacks().catch((error: Error) => `(state unreadable: ${error.message})`);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${state === "" ? "" : `\n${state}`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
