import type { AppContext } from "../app-context.js";
import type { PortalSettings } from "../config/option-types.js";
import type { Worker } from "../workers/run-worker.js";
import { reconcileOfferings } from "./reservations.js";

/**
 * Returns the units of expired purchases and closes sold-out offerings in the
 * background, so lists stay right between the reads and checkouts that already
 * do the same for one offering. Idempotent and safe in several processes: each
 * release is a guarded UPDATE.
 */
export function reservationWorker(context: AppContext, options: { intervalMs?: number; settings?: PortalSettings } = {}): Worker {
  const settings = options.settings ?? context.settings.portal;
  return {
    name: "rwa-reservations",
    intervalMs: options.intervalMs ?? 5_000,
    tick: () => reconcileOfferings(context, { releaseGraceMs: settings.releaseGraceMs }),
  };
}
