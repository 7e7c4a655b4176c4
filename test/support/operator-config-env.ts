import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** The secrets key and the payment address of the operator's configuration in tests. */
export const OPERATOR_KEY = "ab".repeat(32);
export const OPERATOR_ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/**
 * The operator's Base configuration of test/unit/cfg-operator and test/operator-config, in a
 * directory the test makes (`directory()` is read at each call, after the test's `beforeAll`).
 */
export function operatorConfigEnv(directory: () => string) {
  function file(name: string, content: string): string {
    const path = join(directory(), name);
    writeFileSync(path, content);
    return path;
  }

  /**
   * A valid Base configuration; each test breaks one or more variables. A trial on the embedded
   * databases (EMBEDDED_TRIAL), so that a check reads a store without a Postgres server.
   */
  function baseEnv(overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      NETWORKS: "base",
      EMBEDDED_TRIAL: "true",
      BASE_RPC_URL: "https://base.example",
      BASE_START_BLOCK: "1",
      BASE_PAYMENT_ADDRESSES: OPERATOR_ADDRESS,
      PUBLIC_BASE_URL: "https://pay.example.com",
      SECRETS_KEY_FILE: file("secrets.key", `${OPERATOR_KEY}\n`),
      DATA_DIR: join(directory(), "data"),
      ...overrides,
    };
  }

  return { file, baseEnv };
}
