import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chainExitMessage, redactRpcUrl } from "./fork.js";
import { type LocalStack, PROJECT_ROOT, startLocalStack } from "./local-stack.js";
import { findFreePort } from "./ports.js";
import { acquireStackLock } from "./stack-lock.js";

/**
 * `npm start`: the whole service on a local Anvil chain, until Ctrl-C.
 * `FORK_URL=<rpc> npm start` (and optionally `FORK_BLOCK_NUMBER`): the same on an
 * Anvil fork of Base or Base Sepolia, with its canonical USDC (README "Fork mode").
 */
async function isFree(port: number): Promise<boolean> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

async function preferredPort(envValue: string | undefined, fallback: number): Promise<number> {
  if (envValue !== undefined) return Number(envValue);
  return (await isFree(fallback)) ? fallback : findFreePort();
}

const forkUrl = process.env.FORK_URL === "" ? undefined : process.env.FORK_URL;
const forkBlock = process.env.FORK_BLOCK_NUMBER === "" ? undefined : process.env.FORK_BLOCK_NUMBER;

/**
 * Seconds between blocks. A fork mines every 2 s by default, as Base does, so that
 * the network's own confirmation count is reached as on Base; `BLOCK_TIME=0` is a
 * block per transaction (mine more with `anvil_mine`).
 */
function blockTime(): number | undefined {
  const value = process.env.BLOCK_TIME;
  if (value === undefined || value === "") return forkUrl === undefined ? undefined : 2;
  const seconds = Number(value);
  if (!Number.isInteger(seconds) || seconds < 0)
    fail("BLOCK_TIME must be a whole number of seconds (0: a block per transaction).");
  return seconds === 0 ? undefined : seconds;
}

function fail(message: string): never {
  console.error(`npm start: ${message}`);
  process.exit(1);
}

if (forkBlock !== undefined && forkUrl === undefined)
  fail("FORK_BLOCK_NUMBER is set but FORK_URL is not: name the RPC URL to fork.");
if (forkBlock !== undefined && !/^\d+$/.test(forkBlock)) fail(`FORK_BLOCK_NUMBER must be a block number (got "${forkBlock}").`);

const dataDir = process.env.DATA_DIR ?? join(PROJECT_ROOT, ".data");
mkdirSync(dataDir, { recursive: true });
const lock = acquireStackLock(dataDir);
let stack: LocalStack;
try {
  stack = await startLocalStack({
    dataDir,
    anvilPort: await preferredPort(process.env.ANVIL_PORT, 8545),
    apiPort: await preferredPort(process.env.PORT, 42069),
    persistChain: true,
    blockTime: blockTime(),
    inheritOutput: process.env.VERBOSE === "1",
    // The stack starts the service again when it exits on its own (docs/operations.md).
    onServiceRestart: (ponder) => {
      lock.setChildren([stack.anvil.process.pid, ponder.process.pid].filter((pid): pid is number => pid !== undefined));
      console.log(`the service was started again: ${ponder.baseUrl}`);
    },
    fork:
      forkUrl === undefined ? undefined : { url: forkUrl, blockNumber: forkBlock === undefined ? undefined : Number(forkBlock) },
  });
} catch (error) {
  lock.release();
  // A fork problem is explained in its message; anything else keeps its stack for diagnosis.
  fail(error instanceof Error && error.name === "ForkError" ? error.message : String((error as Error).stack ?? error));
}

lock.setChildren([stack.anvil.process.pid, stack.ponder.process.pid].filter((pid): pid is number => pid !== undefined));
const { local } = stack;
const chainLabel =
  local.fork === undefined
    ? "Anvil"
    : `Anvil fork of ${local.network} at block ${local.fork.blockNumber} from ${redactRpcUrl(local.fork.url)}`;
const restartNote =
  local.fork === undefined
    ? `the next npm start reuses ${stack.dataDir}.`
    : `the next npm start forks afresh (the plain chain's data in ${stack.dataDir} is left alone).`;
console.log(`
  USDC settlement service, local stack
  API           ${local.baseUrl}   (docs: ${local.baseUrl}/docs, health: ${local.baseUrl}/v1/health)
  Console       ${local.baseUrl}/console   (sign in with a browser wallet; the admin wallet's key is in local.json)
  Test payment  npm run pay -- <sessionId>
  Chain         ${local.rpcUrl}   (chain id ${local.chainId}, ${chainLabel})
  USDC          ${local.contracts.usdc}${local.fork === undefined ? "" : `   (${local.network}'s canonical USDC)`}
  Certificate   ${local.contracts.certificate}
  Rewards       ${local.contracts.rewardDistributor}
  Subscriptions ${local.contracts.subscriptionManager}
  Partner       ${local.partner.id}   payment address ${local.partner.paymentAddress}
  API key       (in ${join(stack.dataDir, "local.json")})
  Admin wallet  ${local.admin.address}
  Accounts      ${local.accounts.length} Anvil accounts, each with 1,000,000 ${local.fork === undefined ? "test" : "fork"} USDC
  Everything above, with keys: ${join(stack.dataDir, "local.json")}
  Ctrl-C stops the stack; ${restartNote}
`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  console.log("stopping…");
  await stack.stop();
  lock.release();
  process.exit(0);
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
// "close": after Anvil's stderr was read to its end, so its last lines are all there.
stack.anvil.process.on("close", (code, signal) => {
  if (stopping) return;
  console.error(chainExitMessage({ code, signal, forkUrl: stack.local.fork?.url, anvilLines: stack.anvil.lastLines() }));
  void stack.stop().then(() => {
    lock.release();
    process.exit(1);
  });
});
