import { execFile } from "node:child_process";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../local/local-stack.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read the CLI's JSON as they read a response body
export type CliRun = { code: number; stdout: string; stderr: string; json: () => any };

/** Runs the operator CLI as an operator would (`npx settlement …`: the package's bin, which runs its esbuild bundle), with exactly `env`. */
export function settlement(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(PROJECT_ROOT, "bin", "settlement.js"), ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
      },
    );
  });
}
