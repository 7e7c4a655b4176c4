import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

/**
 * Every process a test starts (Anvil, Ponder, a CLI, Postgres) inherits this run's
 * mark through its environment; at the end of the run, whatever still carries it is
 * ended. A test file that crashes, times out or is killed mid-way cannot leave a
 * chain or an indexer running after vitest exits.
 */
const MARK = "SETTLEMENT_TEST_RUN";

export function setup(): () => void {
  const run = randomUUID();
  process.env[MARK] = run;
  return () => endMarkedProcesses(`${MARK}=${run}`);
}

function endMarkedProcesses(mark: string): void {
  const marked = markedProcesses(mark);
  for (const pid of marked) signal(pid, "SIGTERM");
  if (marked.length > 0) {
    // A last look a moment later: what ignored SIGTERM is killed.
    const until = Date.now() + 2_000;
    while (Date.now() < until && markedProcesses(mark).length > 0)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    for (const pid of markedProcesses(mark)) signal(pid, "SIGKILL");
    console.warn(`global teardown: ended ${marked.length} process(es) a test had left running`);
  }
}

function markedProcesses(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environment = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
      if (environment.includes(mark)) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}
