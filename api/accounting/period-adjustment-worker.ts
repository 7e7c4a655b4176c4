import type { AppContext } from "../app-context.js";
import type { Worker } from "../workers/run-worker.js";
import { detectAdjustments } from "./closed-periods.js";
import { allPeriods } from "./period-record.js";

/**
 * A pass re-reads every closed range's ledger to compare it with what was kept
 * (closed-periods.ts): a minute apart, so an adjustment's `detectedAt` is within a
 * minute of the index learning the fact, whether or not anyone reads the periods.
 */
export const PERIOD_ADJUSTMENT_INTERVAL_MS = 60_000;

export function periodAdjustmentWorker(context: AppContext, intervalMs = PERIOD_ADJUSTMENT_INTERVAL_MS): Worker {
  return {
    name: "period-adjustments",
    intervalMs,
    tick: async () => {
      for (const period of await allPeriods(context.store)) await detectAdjustments(context, period);
    },
  };
}
