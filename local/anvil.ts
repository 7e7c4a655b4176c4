import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createPublicClient, http } from "viem";
import { findFreePort } from "./ports.js";
import { stopChild } from "./stop-child.js";

/** Anvil's well-known development mnemonic: its first accounts are funded with ETH. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

export type AnvilOptions = {
  /** Port to listen on; a free one is picked when omitted. */
  port?: number;
  chainId?: number;
  /** Seconds between blocks; omitted means a block per transaction (automine). */
  blockTime?: number;
  /** File anvil loads its state from and dumps it to, so a restart keeps the chain. */
  stateFile?: string;
  /** Unix seconds of the genesis block: a chain clock behind or ahead of the wall clock. */
  genesisTimestamp?: number;
  /** Fork this RPC endpoint: state is read from it on demand, new blocks are local. */
  forkUrl?: string;
  /** Block of `forkUrl` to fork at; its latest block when omitted. */
  forkBlockNumber?: number;
  /** Forward anvil's own output to this process' stdout. */
  verbose?: boolean;
};

export type AnvilInstance = {
  rpcUrl: string;
  port: number;
  chainId: number;
  process: ChildProcess;
  stop: () => Promise<void>;
  /**
   * Anvil's own last words on stderr (a panic's message and context), without colour
   * codes or the backtrace's frames: what to show when it exits on its own.
   */
  lastLines: (count?: number) => string[];
};

/** At most this much of Anvil's stderr is kept (its tail): a long-running chain must not grow memory. */
const STDERR_KEPT = 64 * 1024;

/** Anvil's stderr as lines worth showing: colour codes removed, the backtrace and its hints dropped. */
export function anvilLastLines(stderr: string, count = 12): string[] {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
  const plain = stderr.replace(/\u001b\[[0-9;]*m/g, "");
  const beforeBacktrace = plain.split(/━+\s*BACKTRACE\s*━+/)[0] ?? plain;
  return beforeBacktrace
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "" && !/^This is a bug\. Consider reporting it/.test(line.trim()))
    .slice(-count);
}

/** The anvil binary shipped inside the npm package for this platform (no download). */
export function anvilBinaryPath(): string {
  const require = createRequire(import.meta.url);
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
  const packageJson = require.resolve(`${platformPackage}/package.json`);
  return join(dirname(packageJson), "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
}

export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilInstance> {
  const port = options.port ?? (await findFreePort());
  const chainId = options.chainId ?? 31337;
  const args = ["--host", "127.0.0.1", "--port", String(port), "--chain-id", String(chainId), "--silent"];
  if (options.blockTime !== undefined) args.push("--block-time", String(options.blockTime));
  if (options.genesisTimestamp !== undefined) args.push("--timestamp", String(options.genesisTimestamp));
  if (options.stateFile !== undefined) args.push("--state", options.stateFile, "--state-interval", "2");
  if (options.forkUrl !== undefined) {
    args.push("--fork-url", options.forkUrl);
    if (options.forkBlockNumber !== undefined) args.push("--fork-block-number", String(options.forkBlockNumber));
  }

  const child = spawn(anvilBinaryPath(), args, { stdio: ["ignore", options.verbose ? "inherit" : "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > STDERR_KEPT) stderr = stderr.slice(-STDERR_KEPT);
  });
  const rpcUrl = `http://127.0.0.1:${port}`;
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) });

  // A fork first fetches its fork block from the upstream, which may be far away.
  const startTimeoutMs = options.forkUrl === undefined ? 15_000 : 60_000;
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with code ${child.exitCode}: ${stderr.trim()}`);
    try {
      await client.getChainId();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`anvil did not answer on ${rpcUrl} within ${startTimeoutMs / 1000} s: ${stderr.trim()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const stop = () => stopChild(child, "SIGINT", 5_000);
  return { rpcUrl, port, chainId, process: child, stop, lastLines: (count) => anvilLastLines(stderr, count) };
}
