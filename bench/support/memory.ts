import pidusage from "pidusage";
import { processTree } from "./processes.js";

/**
 * Samples the resident set size of a process and its descendants every
 * `intervalMs` (pidusage) and answers the peak within a named phase.
 */
export type MemorySampler = {
  watch: (pid: number | undefined) => void;
  begin: (phase: string) => void;
  /** Peak RSS in bytes over the phase (one last sample is taken now). */
  end: (phase: string) => Promise<number | undefined>;
  stop: () => Promise<void>;
};

export function startMemorySampler(intervalMs = 200): MemorySampler {
  let pid: number | undefined;
  let stopped = false;
  const open = new Map<string, number>();
  const sample = async () => {
    if (pid === undefined) return;
    const pids = processTree(pid);
    try {
      const usage = await pidusage(pids);
      const rss = Object.values(usage).reduce((total, stat) => total + (stat?.memory ?? 0), 0);
      for (const [phase, peak] of open) if (rss > peak) open.set(phase, rss);
    } catch {
      // a process of the tree ended between listing and sampling
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await sample();
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    watch(next) {
      pid = next;
    },
    begin(phase) {
      open.set(phase, 0);
    },
    async end(phase) {
      await sample();
      const peak = open.get(phase);
      open.delete(phase);
      return peak === undefined || peak === 0 ? undefined : peak;
    },
    async stop() {
      stopped = true;
      await loop;
      pidusage.clear();
    },
  };
}
