import type { ChildProcess } from "node:child_process";

/**
 * Asks a child process to end (`signal`), kills it if it has not after `graceMs`, and
 * resolves once it has exited (at once if it already had).
 */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill(signal);
    setTimeout(() => child.kill("SIGKILL"), graceMs).unref();
  });
}
