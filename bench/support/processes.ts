import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { PROJECT_ROOT } from "../../local/local-stack.js";
import { stopChild } from "../../local/stop-child.js";

export { PROJECT_ROOT };

export type ChildServer = { url: string; port: number; process: ChildProcess; stop: () => Promise<void> };

/**
 * Runs one of the bench's own TypeScript servers in a separate Node process (so
 * that autocannon in this process does not share its event loop) and waits for
 * the `LISTENING <port>` line it prints.
 */
export async function startChildServer(script: string, env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<ChildServer> {
  const child = spawn(process.execPath, ["--import", "tsx", join(PROJECT_ROOT, "bench", script)], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env, PORT: env.PORT ?? "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /LISTENING (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolvePort(Number(match[1]));
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with code ${code}:\n${output}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, port, process: child, stop: () => stopChild(child) };
}

/** `pid` and all its descendants (Linux /proc; elsewhere just `pid`). */
export function processTree(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [pid];
  }
  const children = new Map<number, number[]>();
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // the process ended while we looked
    }
  }
  const tree: number[] = [];
  const queue = [pid];
  while (queue.length > 0 && tree.length < 1_000) {
    const next = queue.shift() as number;
    tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return tree;
}
