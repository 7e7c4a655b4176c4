import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { productionProfileProblems, readConfig } from "../../api/config/config.js";
import { completeFirstStart, prepareStart, recoverInterruptedFirstStart } from "../../api/config/startup.js";
import { PROJECT_ROOT } from "../../local/local-stack.js";
import { renderConfigurationDoc } from "../../scripts/config-docs.js";
import { OPERATOR_ADDRESS, OPERATOR_KEY, operatorConfigEnv } from "../support/operator-config-env.js";

// The operator's configuration rules (docs/deploy.md) that need no node: moved out of
// test/operator-config.test.ts, which keeps the chain-id check, `ponder start`'s refusal and the CLI.
let directory: string;
const KEY = OPERATOR_KEY;
const ADDRESS = OPERATOR_ADDRESS;

const { file, baseEnv } = operatorConfigEnv(() => directory);

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), "settlement-config-rules-"));
});
afterAll(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe("configuration schema", () => {
  it("accepts a complete Base configuration", () => {
    const { config, problems } = readConfig(baseEnv());
    expect(problems).toEqual([]);
    expect(config.networks[0]).toMatchObject({ name: "base", chainId: 8453, paymentAddresses: [ADDRESS], confirmations: 10 });
    expect(config.secretsKey?.toString("hex")).toBe(KEY);
  });

  it("lists every missing variable at once", () => {
    const { problems } = readConfig({ NETWORKS: "base" });
    expect(problems).toEqual([
      expect.stringMatching(/^No RPC URL for network "base": set BASE_RPC_URL/),
      expect.stringMatching(/^No start block for network "base": set BASE_START_BLOCK/),
      expect.stringMatching(/^PUBLIC_BASE_URL is not set/),
      expect.stringMatching(/^SECRETS_KEY_FILE is not set/),
    ]);
  });

  it("runs the production profile on Postgres only, unless EMBEDDED_TRIAL says it is a trial", async () => {
    const production = { EMBEDDED_TRIAL: undefined };
    const problems = productionProfileProblems(readConfig(baseEnv(production)).config);
    expect(problems).toEqual([
      expect.stringMatching(
        /^DATABASE_URL is not set: .*PGlite is for local development only\. For a trial on one machine, set EMBEDDED_TRIAL=true$/,
      ),
      expect.stringMatching(/^STORE_URL is not set: .*For a trial on one machine, set EMBEDDED_TRIAL=true$/),
    ]);
    // A start (and `config check`) refuses with them, naming the variable.
    await expect(prepareStart(baseEnv(production), "check")).rejects.toThrow(/set EMBEDDED_TRIAL=true/);
    const pgliteStore = readConfig(
      baseEnv({ ...production, DATABASE_URL: "postgres://db/index", STORE_URL: `pglite:${join(directory, "store")}` }),
    );
    expect(productionProfileProblems(pgliteStore.config)).toEqual([
      expect.stringMatching(/^STORE_URL names an embedded pglite: store/),
    ]);
    const fleet = readConfig(baseEnv({ ...production, DATABASE_URL: "postgres://db/index", STORE_URL: "postgres://db/store" }));
    expect(productionProfileProblems(fleet.config)).toEqual([]);
    expect(productionProfileProblems(readConfig(baseEnv()).config)).toEqual([]);
    // Base Sepolia is the production profile too; local mode (npm start, fork mode) never is.
    const sepolia = baseEnv({
      ...production,
      NETWORKS: "base-sepolia",
      BASE_SEPOLIA_RPC_URL: "https://sepolia.example",
      BASE_SEPOLIA_START_BLOCK: "1",
      BASE_SEPOLIA_PAYMENT_ADDRESSES: ADDRESS,
    });
    expect(productionProfileProblems(readConfig(sepolia).config)).toEqual([
      expect.stringMatching(/^DATABASE_URL is not set: on base-sepolia/),
      expect.stringMatching(/^STORE_URL is not set: on base-sepolia/),
    ]);
    expect(productionProfileProblems(readConfig(baseEnv({ ...production, LOCAL_MODE: "true" })).config)).toEqual([]);
  });

  it.each([
    ["NETWORKS", "base,mainnet", /NETWORKS: not one of base, base-sepolia, local/],
    ["PUBLIC_BASE_URL", "pay.example.com", /PUBLIC_BASE_URL: not an http\(s\) URL/],
    ["BASE_RPC_URL", "ftp://node", /BASE_RPC_URL: not an http\(s\) URL$/],
    ["BASE_WS_URL", "https://node", /BASE_WS_URL: not a ws:\/\/ or wss:\/\/ URL/],
    ["BASE_START_BLOCK", "-1", /BASE_START_BLOCK: at least 0/],
    ["BASE_CONFIRMATIONS", "0", /BASE_CONFIRMATIONS: at least 1/],
    ["BASE_POLLING_INTERVAL_MS", "50", /BASE_POLLING_INTERVAL_MS: at least 100/],
    ["BASE_PAYMENT_ADDRESSES", `${ADDRESS},0x1234`, /BASE_PAYMENT_ADDRESSES: not an address/],
    ["BASE_USDC_ADDRESS", "usdc", /BASE_USDC_ADDRESS: not an address/],
    ["ADMIN_ADDRESSES", "0xnope", /ADMIN_ADDRESSES: not an address/],
    ["STORE_URL", "mysql://x", /STORE_URL: must be postgres/],
    ["DATABASE_URL", "postgres:/broken", /DATABASE_URL: not a postgres:\/\/ URL$/],
    ["LOCAL_MODE", "yes", /LOCAL_MODE: must be true or false/],
    ["WORKERS", "maybe", /WORKERS: must be on or off/],
    ["WEBHOOK_CONCURRENCY", "lots", /WEBHOOK_CONCURRENCY: not a number/],
    ["SIWE_CHALLENGE_TTL_SECONDS", "3600", /SIWE_CHALLENGE_TTL_SECONDS: at most 600/],
    ["TRUST_PROXY", "1", /TRUST_PROXY: must be true or false/],
  ])("refuses a malformed %s, naming it", (name, value, expected) => {
    const { problems } = readConfig(baseEnv({ [name]: value }));
    expect(problems).toEqual([expect.stringMatching(expected)]);
  });

  it("never repeats a value that may hold a credential", () => {
    const { problems } = readConfig(baseEnv({ DATABASE_URL: "mysql://user:hunter2@db", BASE_RPC_URL: "ftp://key-s3cret@node" }));
    expect(problems.join("\n")).not.toMatch(/hunter2|s3cret/);
  });

  it("reads every key file in one format: 64 hex digits with or without 0x", () => {
    for (const content of [KEY, `0x${KEY}`, `  0x${KEY.toUpperCase()}\n`]) {
      const path = file("key", content);
      const { config, problems } = readConfig(
        baseEnv({ SECRETS_KEY_FILE: path, VOUCHER_KEY_FILE: path, BASE_RELAYER_KEY_FILE: path }),
      );
      expect(problems).toEqual([]);
      expect([config.secretsKey?.toString("hex"), config.voucherPrivateKey, config.relayerKeys.base]).toEqual([
        KEY,
        `0x${KEY}`,
        `0x${KEY}`,
      ]);
    }
    const short = file("short.key", "abcd");
    const base64 = file("base64.key", Buffer.alloc(32, 7).toString("base64"));
    const { problems } = readConfig(
      baseEnv({ SECRETS_KEY_FILE: base64, VOUCHER_KEY_FILE: short, BASE_RELAYER_KEY_FILE: join(directory, "absent.key") }),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^BASE_RELAYER_KEY_FILE: cannot read .*absent\.key \(no such file\)/),
      expect.stringMatching(/^VOUCHER_KEY_FILE: .*short\.key must hold 64 hex digits/),
      expect.stringMatching(/^SECRETS_KEY_FILE: .*base64\.key must hold 64 hex digits/),
    ]);
  });

  it("requires the voucher key when a certificate contract is configured", () => {
    const { problems } = readConfig(baseEnv({ BASE_CERTIFICATE_ADDRESS: ADDRESS }));
    expect(problems).toEqual([expect.stringMatching(/^VOUCHER_KEY_FILE is not set, but BASE_CERTIFICATE_ADDRESS/)]);
  });

  it("clears an embedded index whose first start was interrupted, and only that", () => {
    const config = { dataDir: join(directory, "interrupted"), databaseUrl: undefined };
    expect(recoverInterruptedFirstStart(config)).toBe("fresh");
    // Killed while PGlite wrote its files: the marker is still there.
    mkdirSync(join(config.dataDir, "ponder"));
    writeFileSync(join(config.dataDir, "ponder", "PG_VERSION"), "garbage");
    expect(recoverInterruptedFirstStart(config)).toBe("recovered");
    expect(existsSync(join(config.dataDir, "ponder"))).toBe(false);
    // The service came up (completeFirstStart): an existing index is never touched again.
    mkdirSync(join(config.dataDir, "ponder"));
    completeFirstStart(config);
    expect(recoverInterruptedFirstStart(config)).toBe("existing");
    expect(existsSync(join(config.dataDir, "ponder"))).toBe(true);
  });
});

describe("documentation and process.env", () => {
  it("docs/configuration.md is what `npm run docs:config` generates", () => {
    expect(readFileSync(join(PROJECT_ROOT, "docs", "configuration.md"), "utf8")).toBe(renderConfigurationDoc());
  });

  it("no service module reads process.env: only ponder.config.ts hands it to the configuration", () => {
    const readers: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.tsx?$/.test(name) && readFileSync(path, "utf8").includes("process.env"))
          readers.push(path.slice(PROJECT_ROOT.length + 1));
      }
    };
    walk(join(PROJECT_ROOT, "api"));
    walk(join(PROJECT_ROOT, "src"));
    walk(join(PROJECT_ROOT, "cli"));
    expect(readers).toEqual([]);
  });
});
