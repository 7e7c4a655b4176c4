import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Ends every process a test started and left behind (test/support/global-setup.ts).
    globalSetup: ["test/support/global-setup.ts"],
    // Each file starts its own Anvil and service; two cores run two files at once.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
  },
});
