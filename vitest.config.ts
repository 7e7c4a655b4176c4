import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Ends every process a test started and left behind (test/support/global-setup.ts).
    globalSetup: ["test/support/global-setup.ts"],
    // Each file starts its own Anvil and service; two cores run two files at once.
    fileParallelism: true,
    maxWorkers: 2,
    // A worker runs its files one after another in one process, importing viem, Hono and
    // our modules once rather than once per file (import time: 151 s -> 26 s summed over
    // a run). Every file starts and stops what it uses; one that changes process.env puts
    // it back in afterAll.
    isolate: false,
    testTimeout: 60_000,
    // expect.poll waits on a condition (a page catching up on its own refetch, say); its default
    // of one second is a fixed deadline that a loaded machine misses (a fresh clone's run once
    // saw a console page's order status a moment after its refunds). Thirty seconds, as our waitFor.
    expect: { poll: { timeout: 30_000 } },
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
  },
});
