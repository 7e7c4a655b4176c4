import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT, startLocalStack } from "./local-stack.js";
import { findFreePort } from "./ports.js";
import { acquireStackLock } from "./stack-lock.js";

/** `npm start`: the whole service on a local Anvil chain, until Ctrl-C. */
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

const dataDir = process.env.DATA_DIR ?? join(PROJECT_ROOT, ".data");
mkdirSync(dataDir, { recursive: true });
const lock = acquireStackLock(dataDir);
const stack = await startLocalStack({
  dataDir,
  anvilPort: await preferredPort(process.env.ANVIL_PORT, 8545),
  apiPort: await preferredPort(process.env.PORT, 42069),
  persistChain: true,
  blockTime: process.env.BLOCK_TIME === undefined ? undefined : Number(process.env.BLOCK_TIME),
  inheritOutput: process.env.VERBOSE === "1",
});

lock.setChildren([stack.anvil.process.pid, stack.ponder.process.pid].filter((pid): pid is number => pid !== undefined));
const { local } = stack;
console.log(`
  USDC settlement service, local stack
  API           ${local.baseUrl}   (docs: ${local.baseUrl}/docs, health: ${local.baseUrl}/v1/health)
  Chain         ${local.rpcUrl}   (chain id ${local.chainId}, Anvil)
  USDC          ${local.contracts.usdc}
  Certificate   ${local.contracts.certificate}
  Partner       ${local.partner.id}   payment address ${local.partner.paymentAddress}
  API key       (in ${join(stack.dataDir, "local.json")})
  Admin wallet  ${local.admin.address}
  Accounts      ${local.accounts.length} Anvil accounts, each with 1,000,000 test USDC
  Everything above, with keys: ${join(stack.dataDir, "local.json")}
  Ctrl-C stops the stack; the next npm start reuses ${stack.dataDir}.
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
stack.ponder.process.on("exit", (code) => {
  if (stopping) return;
  console.error(`the service exited (code ${code}); stopping the chain`);
  void stack.anvil.stop().then(() => {
    lock.release();
    process.exit(1);
  });
});
