import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, readConfig } from "../api/config/config.js";
import { checkChainIds, prepareStart } from "../api/config/startup.js";
import { migrateStore, openSqliteStore } from "../api/store/open-store.js";
import { type AnvilInstance, startAnvil } from "../local/anvil.js";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { spawnPonder } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { settlement } from "./support/operator-cli.js";
import { OPERATOR_ADDRESS, operatorConfigEnv } from "./support/operator-config-env.js";

// Configuration validation (docs/deploy.md) where a node answers: one Anvil (chain 31337) answers the
// chain-id check as a node of the wrong network. The rules that need no node are in
// test/unit/cfg-operator.test.ts.
let directory: string;
let anvil: AnvilInstance;
const ADDRESS = OPERATOR_ADDRESS;

const { baseEnv } = operatorConfigEnv(() => directory);

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), "settlement-config-"));
  anvil = await startAnvil({ chainId: 31337 });
});
afterAll(async () => {
  await anvil?.stop();
  rmSync(directory, { recursive: true, force: true });
});

describe("configuration schema", () => {
  it("refuses an RPC URL of another chain, and one that does not answer", async () => {
    const silent = `http://127.0.0.1:${await findFreePort()}`;
    const { config } = readConfig(
      baseEnv({
        NETWORKS: "base,base-sepolia",
        BASE_RPC_URL: anvil.rpcUrl,
        BASE_SEPOLIA_RPC_URL: silent,
        BASE_SEPOLIA_START_BLOCK: "1",
      }),
    );
    expect(await checkChainIds(config.networks, 1_000)).toEqual([
      "BASE_RPC_URL answers chain id 31337, but base is chain 8453",
      expect.stringMatching(/^BASE_SEPOLIA_RPC_URL: eth_chainId failed/),
    ]);
  });

  it("prepareStart reports the environment's, the chain's and the store's problems in one error", async () => {
    const error = await prepareStart(
      baseEnv({ BASE_RPC_URL: anvil.rpcUrl, BASE_PAYMENT_ADDRESSES: "", PUBLIC_BASE_URL: "" }),
      "check",
    ).catch((caught) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(/^PUBLIC_BASE_URL is not set/),
      "BASE_RPC_URL answers chain id 31337, but base is chain 8453",
      expect.stringMatching(/^No payment address for network "base"/),
    ]);
  });

  it("stops `ponder start` before Ponder opens its index, listing every problem", { timeout: 180_000 }, async () => {
    const dataDir = join(directory, "refused");
    const env = baseEnv({ DATA_DIR: dataDir, BASE_RPC_URL: anvil.rpcUrl, PUBLIC_BASE_URL: "", SECRETS_KEY_FILE: "" });
    const ponder = spawnPonder({ root: PROJECT_ROOT, port: await findFreePort(), env });
    const code = await new Promise<number | null>((resolve) => ponder.process.once("exit", resolve));
    expect(code).toBe(1);
    for (const problem of ["PUBLIC_BASE_URL is not set", "SECRETS_KEY_FILE is not set", "BASE_RPC_URL answers chain id 31337"]) {
      expect(ponder.output()).toContain(problem);
    }
    // Nothing was indexed nor created: the embedded index directory does not exist.
    expect(existsSync(join(dataDir, "ponder"))).toBe(false);
    expect(ponder.output()).not.toContain("Created database tables");

    const check = await settlement(["config", "check", "--json"], env);
    expect(check.code).toBe(78);
    expect(check.json().problems).toHaveLength(3);
  });
});

describe("operator CLI on a SQLite store", () => {
  it("creates, lists, refuses and audits", { timeout: 240_000 }, async () => {
    const env = {
      DATA_DIR: join(directory, "cli"),
      NETWORKS: "base",
      BASE_START_BLOCK: "1",
      BASE_RPC_URL: "https://base.example",
    };
    const created = await settlement(["partner", "create", "--name", "Shop", "--mode", "test", "--json"], env);
    expect(created.code).toBe(0);
    const partnerId = created.json().partner.id;
    expect(created.json().apiKey.apiKey).toMatch(/^sk_test_/);
    expect((await settlement(["partner", "list"], env)).stdout).toContain(`${partnerId}\tShop\t1 active key(s)`);

    expect(
      (await settlement(["member", "add", "--partner", partnerId, ADDRESS, "--role", "admin", "--json"], env)).json(),
    ).toMatchObject({
      partnerId,
      address: ADDRESS,
      role: "admin",
    });
    const again = await settlement(["member", "add", "--partner", partnerId, ADDRESS.toLowerCase(), "--json"], env);
    expect([again.code, again.json().error.code]).toEqual([1, "member_exists"]);
    expect((await settlement(["member", "list", "--partner", partnerId, "--json"], env)).json().members).toHaveLength(1);

    const issuer = await settlement(["issuer", "register", "--address", ADDRESS, "--name", "Fund", "--json"], env);
    expect(issuer.json()).toMatchObject({ address: ADDRESS, status: "active" });
    const unknownKey = await settlement(["api-key", "revoke", "key_missing"], env);
    expect([unknownKey.code, unknownKey.stderr]).toEqual([1, expect.stringContaining("not_found")]);
    const usage = await settlement(["partner", "create"], env);
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining("--name is required")]);
    expect((await settlement(["partner", "fly"], env)).code).toBe(2);
    const badStore = await settlement(["partner", "list"], { ...env, STORE_URL: "mysql://x" });
    expect([badStore.code, badStore.stderr]).toEqual([78, expect.stringContaining("STORE_URL")]);
    const missingEndpoint = await settlement(["webhook", "test", "we_missing"], { ...env, LOCAL_MODE: "true" });
    expect([missingEndpoint.code, missingEndpoint.stderr]).toEqual([1, expect.stringContaining("not_found")]);

    const store = openSqliteStore(join(env.DATA_DIR, "app.sqlite"));
    await migrateStore(store);
    const audit = await store.selectFrom("audit_log").select(["actor_role", "action"]).orderBy("seq").execute();
    await store.destroy();
    expect(audit).toEqual([
      { actor_role: "operator", action: "partner.create" },
      { actor_role: "operator", action: "partner.member_add" },
      { actor_role: "operator", action: "issuer.register" },
    ]);
  });
});
