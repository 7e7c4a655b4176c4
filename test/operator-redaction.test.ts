import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findFreePort } from "../local/ports.js";
import { settlement } from "./support/operator-cli.js";

// Issue 24, finding 4: `settlement config check` printed an RPC URL's credentials
// from the fetch error (undici quotes the URL it refused). Every form a provider uses
// for its key: userinfo, a key-like path segment, a query value.
let directory: string;
const PASSWORD = "hunter2-Pa55word";
const PATH_KEY = "Xq3bT9kP0aLm4Zr7Yc2Wd8Ne";
const QUERY_KEY = "qk_live_51HxYzAbCdEf";
// Issue 40: a key need not look like one (short, with a dot): every path segment is hidden.
const SHORT_PATH_KEY = "k3y.Sh0rt";

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), "settlement-redact-"));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

async function env() {
  const secrets = join(directory, "secrets.key");
  writeFileSync(secrets, `${"ab".repeat(32)}\n`);
  const port = await findFreePort();
  return {
    NETWORKS: "base,base-sepolia",
    BASE_RPC_URL: `http://alice:${PASSWORD}@127.0.0.1:${port}/v2/${PATH_KEY}/${SHORT_PATH_KEY}`,
    BASE_START_BLOCK: "1",
    BASE_PAYMENT_ADDRESSES: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    BASE_SEPOLIA_RPC_URL: `http://127.0.0.1:${port}/rpc/${PATH_KEY}?apikey=${QUERY_KEY}`,
    BASE_SEPOLIA_START_BLOCK: "1",
    BASE_SEPOLIA_PAYMENT_ADDRESSES: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    PUBLIC_BASE_URL: "https://pay.example.com",
    SECRETS_KEY_FILE: secrets,
    DATA_DIR: join(directory, "data"),
  };
}

describe("config check with credentials in RPC URLs", () => {
  it("reports both failing nodes without printing a password or key, as text and as JSON", async () => {
    const variables = await env();
    for (const args of [
      ["config", "check"],
      ["config", "check", "--json"],
    ]) {
      const run = await settlement(args, variables);
      const printed = `${run.stdout}\n${run.stderr}`;
      expect(run.code, printed).toBe(78);
      expect(printed).toContain("BASE_RPC_URL: eth_chainId failed");
      expect(printed).toContain("BASE_SEPOLIA_RPC_URL: eth_chainId failed");
      for (const secret of [PASSWORD, PATH_KEY, QUERY_KEY, SHORT_PATH_KEY, "alice"])
        expect(printed, printed).not.toContain(secret);
    }
  });
});
