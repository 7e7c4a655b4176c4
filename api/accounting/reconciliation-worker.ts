import type { AppContext } from "../app-context.js";
import type { Worker } from "../workers/run-worker.js";
import { checkAllAddresses } from "./reconciliation.js";

export const RECONCILIATION_WORKER_NAME = "reconciliation-check";

/** A check costs two sums in the index and one `balanceOf` per payment address. */
export const RECONCILIATION_CHECK_INTERVAL_MS = 10_000;

/** Checks every payment address against the chain periodically, so health answers from the store without asking the chain. */
export function reconciliationWorker(context: AppContext, intervalMs = RECONCILIATION_CHECK_INTERVAL_MS): Worker {
  return { name: RECONCILIATION_WORKER_NAME, intervalMs, tick: () => checkAllAddresses(context) };
}
