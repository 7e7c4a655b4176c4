import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * One `npm start` per data directory. The lock file names the starter and its
 * children; a stale lock (starter gone, e.g. after SIGKILL) has its orphaned Anvil
 * and Ponder stopped, since they would hold the ports and the embedded databases.
 */
export function acquireStackLock(dataDir: string): { setChildren: (pids: number[]) => void; release: () => void } {
  const path = join(dataDir, "stack.lock.json");
  if (existsSync(path)) {
    const lock = JSON.parse(readFileSync(path, "utf8")) as { pid: number; children: number[] };
    if (isAlive(lock.pid)) {
      throw new Error(
        `Another npm start (pid ${lock.pid}) is using ${dataDir}. Stop it first, or set DATA_DIR to another directory.`,
      );
    }
    for (const child of lock.children) if (isAlive(child)) process.kill(child, "SIGKILL");
  }
  let children: number[] = [];
  const write = () => writeFileSync(path, JSON.stringify({ pid: process.pid, children }));
  write();
  return {
    setChildren(pids) {
      children = pids;
      write();
    },
    release() {
      rmSync(path, { force: true });
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
