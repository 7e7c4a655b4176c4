import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueAuditorKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { type CreatedSession, createSession, readSession } from "./support/checkout-helpers.js";
import { settlement } from "./support/operator-cli.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// `settlement report ledger|reconciliation|orders` (issue 27, SPEC 17) against a running
// local stack: the operator's reports across partners and for one partner, in JSON and
// CSV, equal what the API answers a platform auditor (across partners) and the partner's
// own key (one partner); bad ranges are refused with the documented codes; the CLI's
// short-lived auditor key is revoked once the report is read. Each CLI run starts a Node
// process (a second or more on a loaded machine), hence the long timeouts of the tests that run many.
let stack: TestStack;
let store: Store;
let env: NodeJS.ProcessEnv;
let auditorKey: string;
let settled: CreatedSession;
let otherPartnerId: string;
let toBlock: bigint;
const strangerAddress = privateKeyToAccount(`0x${"33".repeat(32)}`).address;

const range = () => `fromBlock=1&toBlock=${toBlock}`;
const rangeArgs = () => ["--from-block", "1", "--to-block", String(toBlock)];
const auth = (key: string) => ({ headers: { Authorization: `Bearer ${key}` } });

async function json(response: Response) {
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return JSON.parse(text);
}

/** Every page of a paged report, as the API gives it. */
async function allPages(path: string, key: string, limit: number) {
  const data: unknown[] = [];
  let first: { fromBlock?: string; toBlock?: string } | undefined;
  let cursor: string | null = null;
  do {
    const suffix: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page = await json(await stack.partnerFetch(`${path}&limit=${limit}${suffix}`, auth(key)));
    first ??= { fromBlock: page.fromBlock, toBlock: page.toBlock };
    data.push(...page.data);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { ...(first?.fromBlock === undefined ? {} : first), data };
}

async function csvOf(path: string, key: string) {
  const response = await stack.partnerFetch(path, { headers: { Authorization: `Bearer ${key}`, Accept: "text/csv" } });
  expect(response.status).toBe(200);
  return response.text();
}

async function liveAuditorKeys() {
  return (await store.selectFrom("auditor_key").select("id").where("revoked_at", "is", null).execute()).length;
}

beforeAll(async () => {
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  env = { ...stack.serviceEnv, PORT: new URL(stack.ponder.baseUrl).port };

  // A second partner made with the CLI, with an address of its own: the operator's reports span both.
  const created = await settlement(["partner", "create", "--name", "Second shop", "--json"], env);
  expect(created.code, created.stderr).toBe(0);
  otherPartnerId = created.json().partner.id;
  const added = await settlement(
    ["payment-address", "add", "--partner", otherPartnerId, "--network", stack.local.network, strangerAddress, "--json"],
    env,
  );
  expect(added.code, added.stderr).toBe(0);

  // A settled order, and a transfer straight to the demo address (unmatched in).
  settled = await createSession(stack, { externalOrderId: `=SUM(A1)-${Date.now()}` });
  await stack.payUsdc({ from: 1, to: settled.payment.recipient, amount: BigInt(settled.payment.amount) });
  const straight = await stack.payUsdc({ from: 2, to: stack.local.partner.paymentAddress as Address, amount: 7_654_321n });
  await stack.testClient.mine({ blocks: 1 });
  await waitFor(async () => ((await readSession(stack, settled.id)).status === "settled" ? true : undefined), {
    what: "settled session",
  });
  toBlock = await stack.publicClient.getBlockNumber();
  auditorKey = (await issueAuditorKey(store, { mode: "test" })).apiKey;
  await waitFor(
    async () => {
      const response = await stack.partnerFetch(`/v1/ledger?${range()}&limit=500`);
      if (response.status !== 200) return undefined;
      const entries = (await response.json()).data as { transactionHash: string; kind: string }[];
      return entries.some((entry) => entry.transactionHash === straight.hash && entry.kind === "unmatched_in") &&
        entries.some((entry) => entry.kind === "settled")
        ? true
        : undefined;
    },
    { what: "the history in the ledger", intervalMs: 250 },
  );
}, 240_000);

afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

describe("settlement report: the operator's books equal the API's", () => {
  it("reconciliation across partners (JSON) equals an auditor key's answer without partnerId, every row reconciled", async () => {
    const keysBefore = await liveAuditorKeys();
    const run = await settlement(["report", "reconciliation", ...rangeArgs(), "--json"], env);
    expect(run.code, run.stderr).toBe(0);
    const api = await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`, auth(auditorKey)));
    expect(run.json()).toEqual(api);
    const partners = new Set(api.data.map((row: { partnerId: string }) => row.partnerId));
    expect(partners).toContain(stack.local.partner.id);
    expect(partners).toContain(otherPartnerId);
    for (const row of api.data) expect(row.reconciled, JSON.stringify(row)).toBe(true);
    // The CLI's own key lived for the report only; the report is in the audit log.
    expect(await liveAuditorKeys()).toBe(keysBefore);
    const audited = await store
      .selectFrom("audit_log")
      .select(["action", "details"])
      .where("action", "=", "report.read")
      .execute();
    expect(audited.length).toBeGreaterThan(0);
  });

  it("the text form names each address and says reconciled", async () => {
    const run = await settlement(["report", "reconciliation", ...rangeArgs()], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`Blocks 1 to ${toBlock}.`);
    expect(run.stdout).toMatch(/\treconciled/);
    expect(run.stdout).not.toContain("UNRECONCILED");
  });

  it("ledger across partners and for one partner (JSON) equal the API's pages", async () => {
    const across = await settlement(["report", "ledger", ...rangeArgs(), "--json"], env);
    expect(across.code, across.stderr).toBe(0);
    const apiAcross = await allPages(`/v1/ledger?${range()}`, auditorKey, 3);
    expect(across.json()).toEqual(apiAcross);
    expect(apiAcross.data.length).toBeGreaterThanOrEqual(2);

    const one = await settlement(["report", "ledger", ...rangeArgs(), "--partner", stack.local.partner.id, "--json"], env);
    expect(one.code, one.stderr).toBe(0);
    expect(one.json()).toEqual(await allPages(`/v1/ledger?${range()}`, stack.local.partner.apiKey, 2));
  }, 200_000);

  it("orders (JSON, with --status) equal the API's", async () => {
    const run = await settlement(
      ["report", "orders", ...rangeArgs(), "--partner", stack.local.partner.id, "--status", "paid", "--json"],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const api = await allPages(`/v1/orders?${range()}&status=paid`, stack.local.partner.apiKey, 1);
    expect(run.json()).toEqual(api);
    expect(api.data.map((order) => (order as { id: string }).id)).toContain(settled.orderId);
  });

  it("--csv prints exactly the API's CSV, for each report, across partners and for one", async () => {
    for (const [name, path] of [
      ["ledger", "/v1/ledger"],
      ["reconciliation", "/v1/reports/reconciliation"],
      ["orders", "/v1/orders"],
    ] as const) {
      const across = await settlement(["report", name, ...rangeArgs(), "--csv"], env);
      expect(across.code, across.stderr).toBe(0);
      const api = await csvOf(`${path}?${range()}`, auditorKey);
      expect(across.stdout, name).toBe(api);
      expect(api.split("\r\n").length, name).toBeGreaterThan(2);

      const one = await settlement(["report", name, ...rangeArgs(), "--partner", stack.local.partner.id, "--csv"], env);
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout, name).toBe(await csvOf(`${path}?${range()}`, stack.local.partner.apiKey));
    }
    // The order's "=…" reference is neutralised in the CLI's CSV as in the API's.
    const orders = await settlement(["report", "orders", ...rangeArgs(), "--csv"], env);
    expect(orders.stdout).toContain(`'${settled.externalOrderId}`);
  }, 400_000);

  it("a time range (--from/--to) gives the blocks it covered, as the API does", async () => {
    const from = new Date(Date.now() - 30 * 24 * 60 * 60 * 1000).toISOString();
    const to = new Date(Date.now() + 60 * 60 * 1000).toISOString();
    const run = await settlement(["report", "reconciliation", "--from", from, "--to", to, "--json"], env);
    expect(run.code, run.stderr).toBe(0);
    const api = await json(
      await stack.partnerFetch(
        `/v1/reports/reconciliation?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
        auth(auditorKey),
      ),
    );
    expect(run.json().fromBlock).toBe(api.fromBlock);
    expect(BigInt(run.json().toBlock)).toBeGreaterThanOrEqual(toBlock);
  });
});

describe("settlement report refuses", () => {
  async function refused(args: string[], code: string) {
    const keysBefore = await liveAuditorKeys();
    const run = await settlement(["report", ...args, "--json"], env);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.json().error.code, run.stdout).toBe(code);
    expect(await liveAuditorKeys()).toBe(keysBefore);
  }

  // One refusal per code: every rule of a range is a unit test of parseRange
  // (test/unit/accounting-rules.test.ts) and an API test (accounting.test.ts); here the
  // CLI must carry the service's code to its exit status and JSON, leaving no key behind.
  it("bad ranges, with the documented codes", async () => {
    await refused(["ledger", "--from-block", String(toBlock), "--to-block", "1"], "invalid_range");
    await refused(["ledger", "--from-block", "1"], "invalid_range");
    await refused(["reconciliation", "--from", "2020-01-01T00:00:00Z", "--to", "2026-12-31T00:00:00Z"], "range_too_wide");
    await refused(["ledger", "--from-block", "1", "--to-block", String(toBlock + 1000n)], "range_not_indexed");
    await refused(["orders", ...rangeArgs(), "--partner", "ptr_nobody"], "not_found");
  }, 400_000);

  it("an unknown report or a misplaced option is a usage error (2); a service that does not answer is said so (1)", async () => {
    const unknown = await settlement(["report", "balances", ...rangeArgs()], env);
    expect(unknown.code).toBe(2);
    const status = await settlement(["report", "ledger", ...rangeArgs(), "--status", "paid"], env);
    expect(status.code).toBe(2);
    const down = await settlement(["report", "ledger", ...rangeArgs(), "--url", "http://127.0.0.1:9"], env);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("does not answer");
  }, 200_000);
});

/**
 * Another service on the machine (another stack, or anything listening): it records every
 * Authorization header it is sent and claims whatever it is asked to prove.
 */
async function startImpostor() {
  const seen: string[] = [];
  const server: Server = createServer((request, response) => {
    if (request.headers.authorization !== undefined) seen.push(request.headers.authorization);
    request.resume();
    request.on("end", () => {
      if (request.method === "POST") {
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ proof: "0".repeat(64) }));
        return;
      }
      response.writeHead(401, { "Content-Type": "application/problem+json" });
      response.end(JSON.stringify({ type: "about:blank", title: "API key is not valid", status: 401, code: "unauthenticated" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("settlement report sends its key only to its own service (issue 43)", () => {
  it("in local mode it asks the service local.json names, not the default port where another service answers", async () => {
    const impostor = await startImpostor();
    try {
      const keysBefore = await liveAuditorKeys();
      const run = await settlement(["report", "reconciliation", ...rangeArgs(), "--json"], {
        ...env,
        PORT: String(impostor.port),
      });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json()).toEqual(await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`, auth(auditorKey))));
      expect(impostor.seen).toEqual([]);
      expect(await liveAuditorKeys()).toBe(keysBefore);
    } finally {
      await impostor.close();
    }
  }, 120_000);

  it("a service that cannot prove it holds the CLI's store is refused (exit 1) and never sees the key", async () => {
    const impostor = await startImpostor();
    try {
      const keysBefore = await liveAuditorKeys();
      for (const args of [
        ["report", "ledger", ...rangeArgs(), "--url", impostor.url, "--json"],
        ["report", "orders", ...rangeArgs(), "--url", impostor.url, "--csv"],
      ]) {
        const run = await settlement(args, env);
        expect(run.code, run.stdout + run.stderr).toBe(1);
        expect(run.stdout + run.stderr).toContain("could not prove");
      }
      expect(impostor.seen).toEqual([]);
      // The key issued for the refused report is revoked at once.
      expect(await liveAuditorKeys()).toBe(keysBefore);
    } finally {
      await impostor.close();
    }
  }, 120_000);
});
