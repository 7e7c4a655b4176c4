import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stopPostgresServer } from "../../local/postgres-server.js";

/**
 * Every process a test starts (Anvil, Ponder, a CLI, Postgres) inherits this run's
 * mark through its environment; at the end of the run, whatever still carries it is
 * ended. A test file that crashes, times out or is killed mid-way cannot leave a
 * chain or an indexer running after vitest exits.
 */
const MARK = "SETTLEMENT_TEST_RUN";

/**
 * This run's folder (test-stack.ts): the empty embedded index and the PostgreSQL server are made
 * here by the first stack that needs them, not by this setup. A run of pure files alone (a
 * developer's `npx vitest run test/unit`) then starts no server and runs no initdb, and in a full
 * run neither delays the first file: on the loaded 2-core machine (2026-11-28) they took 42 s
 * (PGlite's initdb 35 s, Postgres' 7 s) before any test began.
 */
export const TEST_RUN_DIRECTORY = "SETTLEMENT_TEST_RUN_DIRECTORY";

/** Where, in the run's folder, the PostgreSQL server's description lies once it answers (test-stack.ts). */
export const POSTGRES_SERVER_FILE = "postgres-server.json";

export async function setup(): Promise<() => Promise<void>> {
  const run = randomUUID();
  process.env[MARK] = run;
  // Each stack leaves its service log and store here when it stops (test-stack.ts): this run's only.
  rmSync(join(process.cwd(), "test-artifacts", "ponder"), { recursive: true, force: true });
  const runDirectory = mkdtempSync(join(tmpdir(), "settlement-test-run-"));
  process.env[TEST_RUN_DIRECTORY] = runDirectory;
  return async () => {
    const server = join(runDirectory, POSTGRES_SERVER_FILE);
    if (existsSync(server)) {
      try {
        stopPostgresServer((JSON.parse(readFileSync(server, "utf8")) as { directory: string }).directory);
      } catch (error) {
        console.warn(`global teardown: ${(error as Error).message}`);
      }
    }
    endMarkedProcesses(`${MARK}=${run}`);
    rmSync(runDirectory, { recursive: true, force: true });
  };
}

function endMarkedProcesses(mark: string): void {
  const marked = markedProcesses(mark);
  // What each was, read before it ends: the warning below then names what a test left behind.
  const described = marked.map((pid) => `${pid} ${commandLine(pid)}`);
  for (const pid of marked) signal(pid, "SIGTERM");
  if (marked.length > 0) {
    // A last look a moment later: what ignored SIGTERM is killed.
    const until = Date.now() + 2_000;
    while (Date.now() < until && markedProcesses(mark).length > 0)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    for (const pid of markedProcesses(mark)) signal(pid, "SIGKILL");
    console.warn(`global teardown: ended ${marked.length} process(es) a test had left running:\n  ${described.join("\n  ")}`);
  }
}

function markedProcesses(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || parentOf(pid) === process.pid) continue;
    try {
      const environment = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
      if (environment.includes(mark)) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/**
 * Vitest's own workers are this process' children and carry the mark too (they start
 * after the setup): vitest ends them itself. What a test started is their child.
 */
function parentOf(pid: number): number | undefined {
  try {
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** A process' command line, shortened, for the teardown's warning. */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ").trim().slice(0, 200);
  } catch {
    return "(gone)";
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}
