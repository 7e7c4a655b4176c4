import { existsSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { describeStoreOnPostgres } from "./support/store-on-postgres.js";
import { newDataDir, startTestStack } from "./support/test-stack.js";

// Embedded Postgres (PGlite: real Postgres SQL, no server) for the service's own state.
describeStoreOnPostgres("store on embedded Postgres (STORE_URL=pglite:)", {
  async start() {
    const dataDir = newDataDir();
    const stack = await startTestStack({ dataDir, env: { STORE_URL: `pglite:${join(dataDir, "store-postgres")}` } });
    return { stack, stop: () => stack.stop() };
  },
  async storedWhereExpected(stack) {
    expect(existsSync(join(stack.dataDir, "store-postgres", "PG_VERSION"))).toBe(true);
  },
});
