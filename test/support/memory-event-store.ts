import type { ProcessedEventStore } from "../../client/src/index.js";

/** An event store in memory that logs the order of calls. */
export function memoryStore() {
  const log: string[] = [];
  const processed = new Map<string, boolean>();
  const store: ProcessedEventStore & { log: string[]; processed: Map<string, boolean> } = {
    log,
    processed,
    async recordIfNew(id) {
      log.push(`record ${id}`);
      if (processed.has(id)) return false;
      processed.set(id, false);
      return true;
    },
    async markProcessed(id) {
      log.push(`processed ${id}`);
      processed.set(id, true);
    },
    async release(id) {
      log.push(`release ${id}`);
      processed.delete(id);
    },
  };
  return store;
}
