import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../api/store/open-store.js";
import { runWorkers, wakeWorker } from "../../api/workers/run-worker.js";
import { unitStore } from "../support/unit-store.js";

let store: Store;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ store, close } = await unitStore());
});

afterAll(async () => {
  await close();
});

/** Resolves once `condition` holds, checking on each turn of the event loop (never a fixed sleep). */
async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("worker loops", () => {
  it("tick again at once when woken during a tick, instead of waiting out their interval", async () => {
    let ticks = 0;
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    // An interval far longer than the test may take: only a wake can bring the second tick.
    const running = runWorkers(store, [
      {
        name: "wake-during-tick",
        intervalMs: 600_000,
        async tick() {
          ticks++;
          if (ticks === 1) await firstHeld;
        },
      },
    ]);
    try {
      await until(() => ticks === 1, "the first tick");
      // Work committed while the tick runs (the tick may have read before it): wake now.
      wakeWorker("wake-during-tick");
      releaseFirst();
      await until(() => ticks === 2, "a second tick straight after the first");
      // Woken while waiting: the wait ends at once.
      wakeWorker("wake-during-tick");
      await until(() => ticks === 3, "a third tick on a wake during the wait");
    } finally {
      await running.stop(1_000);
    }
    expect(ticks).toBeGreaterThanOrEqual(3);
  });
});
