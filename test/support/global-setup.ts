import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgresServer } from "../../local/postgres-server.js";

/**
 * Every process a test starts (Anvil, Ponder, a CLI, Postgres) inherits this run's
 * mark through its environment; at the end of the run, whatever still carries it is
 * ended. A test file that crashes, times out or is killed mid-way cannot leave a
 * chain or an indexer running after vitest exits.
 */
const MARK = "SETTLEMENT_TEST_RUN";

/**
 * Where this run's empty embedded index lies (test-stack.ts hands it to every stack). A
 * new PGlite database costs seconds of CPU (its initdb); each stack copies this one instead.
 */
export const EMPTY_INDEX_TEMPLATE = "SETTLEMENT_TEST_EMPTY_INDEX";

/**
 * The `postgres` database of this run's one PostgreSQL server (local/postgres-server.ts).
 * Each stack's index gets a database of its own there (test-stack.ts): Postgres in
 * WebAssembly costs a stack 3 to 4 s of CPU at every start, a server database nothing.
 */
export const TEST_POSTGRES_URL = "SETTLEMENT_TEST_POSTGRES_URL";

export async function setup(): Promise<() => Promise<void>> {
  const run = randomUUID();
  process.env[MARK] = run;
  // Each stack leaves its service log and store here when it stops (test-stack.ts): this run's only.
  rmSync(join(process.cwd(), "test-artifacts", "ponder"), { recursive: true, force: true });
  const templateRoot = mkdtempSync(join(tmpdir(), "settlement-empty-index-"));
  const template = join(templateRoot, "ponder");
  const { PGlite } = await import("@electric-sql/pglite");
  const database = new PGlite(template);
  await database.waitReady;
  await database.close();
  process.env[EMPTY_INDEX_TEMPLATE] = template;
  const postgres = await startPostgresServer();
  process.env[TEST_POSTGRES_URL] = postgres.url;
  return async () => {
    await postgres.stop().catch((error: Error) => console.warn(`global teardown: ${error.message}`));
    endMarkedProcesses(`${MARK}=${run}`);
    rmSync(templateRoot, { recursive: true, force: true });
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
