import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { stopChild } from "./processes.js";

export type SpawnedPonder = {
  process: ChildProcess;
  /** The port Ponder actually serves on (it moves on when the asked one is taken). */
  port: () => number;
  output: () => string;
  stop: () => Promise<void>;
};

/**
 * `ponder start` exactly as local/ponder-process.ts runs it, but returned at once
 * (not at `/ready`), so the benchmark can time the start and sample its memory.
 */
export function spawnPonder(params: { root: string; port: number; env: NodeJS.ProcessEnv }): SpawnedPonder {
  const child = spawn(
    process.execPath,
    [
      join(params.root, "node_modules", "ponder", "dist", "esm", "bin", "ponder.js"),
      "start",
      "--schema",
      "public",
      "--port",
      String(params.port),
      "--hostname",
      "127.0.0.1",
      "--log-format",
      "json",
    ],
    {
      cwd: params.root,
      env: { ...process.env, PONDER_TELEMETRY_DISABLED: "true", ...params.env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  let port = params.port;
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
    const created = /"msg":"Created HTTP server","port":(\d+)/.exec(output);
    if (created) port = Number(created[1]);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  return { process: child, port: () => port, output: () => output, stop: () => stopChild(child) };
}
