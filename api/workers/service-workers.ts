import type { AppContext } from "../app-context.js";
import type { Worker } from "./run-worker.js";

/**
 * Every background worker of the service, started once per API process
 * (`WORKERS=off` disables them in a process that should only serve HTTP).
 */
export function serviceWorkers(_context: AppContext): Worker[] {
  return [];
}
