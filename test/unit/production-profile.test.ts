import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, productionProfileProblems, readConfig } from "../../api/config/config.js";
import { prepareStart, type StartRole } from "../../api/config/startup.js";

// SPEC 10, issue 42: a `base` or `base-sepolia` service starts on Postgres only, unless the
// operator says EMBEDDED_TRIAL=true, and the refusal names what to set. No stack: the RPC URL
// is a loopback port nobody listens on, so the start's chain-id check fails at once beside it.
let directory: string;
let closedRpcUrl: string;
const ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

function productionEnv(network: "base" | "base-sepolia", overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const prefix = network === "base" ? "BASE_" : "BASE_SEPOLIA_";
  return {
    NETWORKS: network,
    [`${prefix}RPC_URL`]: closedRpcUrl,
    [`${prefix}START_BLOCK`]: "1",
    [`${prefix}PAYMENT_ADDRESSES`]: ADDRESS,
    PUBLIC_BASE_URL: "https://pay.example.com",
    SECRETS_KEY_FILE: join(directory, "secrets.key"),
    DATA_DIR: join(directory, "data"),
    ...overrides,
  };
}

/** The problems a start of `role` refuses with (it always refuses here: the node is not there). */
async function refusal(env: NodeJS.ProcessEnv, role: StartRole): Promise<string[]> {
  const error = await prepareStart(env, role).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

const embedded = (problem: string) => /^(DATABASE_URL|STORE_URL) /.test(problem);

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), "settlement-profile-"));
  writeFileSync(join(directory, "secrets.key"), `${"ab".repeat(32)}\n`);
  // A port that was free a moment ago and is closed now: a connection to it is refused.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  closedRpcUrl = `http://127.0.0.1:${port}`;
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe("the production profile refuses an embedded index or store", () => {
  it.each([
    "base",
    "base-sepolia",
  ] as const)("on %s, names DATABASE_URL, STORE_URL and EMBEDDED_TRIAL when neither is set", (network) => {
    const problems = productionProfileProblems(readConfig(productionEnv(network)).config);
    expect(problems).toEqual([
      expect.stringMatching(new RegExp(`^DATABASE_URL is not set: on ${network} .*set EMBEDDED_TRIAL=true$`)),
      expect.stringMatching(new RegExp(`^STORE_URL is not set: on ${network} .*set EMBEDDED_TRIAL=true$`)),
    ]);
  });

  it("names only what is embedded: a pglite: store beside a Postgres index, a Postgres store beside PGlite", () => {
    const pgliteStore = productionEnv("base", {
      DATABASE_URL: "postgres://db/index",
      STORE_URL: `pglite:${join(directory, "store")}`,
    });
    expect(productionProfileProblems(readConfig(pgliteStore).config)).toEqual([
      expect.stringMatching(/^STORE_URL names an embedded pglite: store: .*set EMBEDDED_TRIAL=true$/),
    ]);
    const pgliteIndex = productionEnv("base", { STORE_URL: "postgres://db/store" });
    expect(productionProfileProblems(readConfig(pgliteIndex).config)).toEqual([
      expect.stringMatching(/^DATABASE_URL is not set: .*PGlite is for local development only.*set EMBEDDED_TRIAL=true$/),
    ]);
  });

  it("lets Postgres for both, EMBEDDED_TRIAL=true, and local mode through; EMBEDDED_TRIAL=false refuses as unset", () => {
    const postgres = productionEnv("base", { DATABASE_URL: "postgres://db/index", STORE_URL: "postgres://db/store" });
    expect(productionProfileProblems(readConfig(postgres).config)).toEqual([]);
    expect(productionProfileProblems(readConfig(productionEnv("base", { EMBEDDED_TRIAL: "true" })).config)).toEqual([]);
    expect(productionProfileProblems(readConfig(productionEnv("base", { LOCAL_MODE: "true" })).config)).toEqual([]);
    expect(productionProfileProblems(readConfig(productionEnv("base", { EMBEDDED_TRIAL: "false" })).config)).toHaveLength(2);
  });

  it.each([
    "indexer",
    "replica",
    "check",
  ] as const)("a start as %s refuses with the profile's problems, naming the variables", async (role) => {
    const problems = await refusal(productionEnv("base"), role);
    expect(problems.filter(embedded)).toEqual([
      expect.stringMatching(/^DATABASE_URL is not set: .*set EMBEDDED_TRIAL=true$/),
      expect.stringMatching(/^STORE_URL is not set: .*set EMBEDDED_TRIAL=true$/),
    ]);
    // With the trial flag the same start no longer names them (it still fails: no node answers).
    const trial = await refusal(productionEnv("base", { EMBEDDED_TRIAL: "true" }), role);
    expect(trial.filter(embedded)).toEqual([]);
    expect(trial.length).toBeGreaterThan(0);
  });
});
