import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueAuditorKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { SimulationRefused, type SimulationResult, simulate } from "../local/simulate.js";
import { simulateSubscription } from "../local/simulate-subscription.js";
import { type CreatedSession, createSession, readSession } from "./support/checkout-helpers.js";
import { settlement } from "./support/operator-cli.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// One stack of the default configuration for what were 2 files (operator-reports, then simulate), a
// describe block each reading the stack through sharedStack(). simulate runs last: its scenarios move
// the chain's clock forward for good and stop the node for a while. One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("operator-reports", () => {
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
    stack = sharedStack();
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
        response.end(
          JSON.stringify({ type: "about:blank", title: "API key is not valid", status: 401, code: "unauthenticated" }),
        );
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
        expect(run.json()).toEqual(
          await json(await stack.partnerFetch(`/v1/reports/reconciliation?${range()}`, auth(auditorKey))),
        );
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
});

describe("simulate", () => {
  // Scenario triggers (issue 29): each scenario of `npm run simulate` against one real
  // stack, called as the CLI calls it, and what the partner's own webhook receiver got
  // for the scenario's order: the real events, delivered and signed, nothing else.

  const run = promisify(execFile);
  let stack: TestStack;
  let receiver: WebhookReceiver;

  type Delivered = { id: string; type: string; data: Record<string, unknown> };

  beforeAll(async () => {
    stack = sharedStack();
    receiver = await startWebhookReceiver();
    const endpoint = await stack.partnerFetch("/v1/webhook-endpoints", {
      method: "POST",
      json: { url: receiver.url("/simulate"), events: ["*"] },
    });
    expect(endpoint.status).toBe(201);
  }, 420_000);

  afterAll(async () => {
    await receiver?.close();
  });

  const sim = (scenario: string, extra: { sessionId?: string; clientToken?: string; outageMs?: number } = {}) =>
    simulate({
      local: stack.local,
      dataDir: stack.dataDir,
      scenario,
      anvilPid: stack.anvil.process.pid,
      timeoutMs: 60_000,
      ...extra,
    });

  /** Waits until the receiver acknowledged every expected type for the order, then returns all it got for it. */
  async function receivedFor(result: SimulationResult, types = result.expected): Promise<Delivered[]> {
    const forOrder = () =>
      receiver.acknowledged
        .map((request) => JSON.parse(request.rawBody.toString()) as Delivered)
        .filter((event) => event.data.orderId === result.orderId || event.data.sessionId === result.sessionId);
    await waitFor(async () => (types.every((type) => forOrder().some((event) => event.type === type)) ? true : undefined), {
      what: `${types.join(", ")} delivered for ${result.orderId}`,
    });
    return forOrder();
  }

  const typesOf = (events: Delivered[]) => events.map((event) => event.type);

  describe("npm run simulate: each scenario's events reach the partner's receiver", { timeout: 120_000 }, () => {
    it("underpaid and overpaid: payment.unresolved with the reason, linked to the session, which stays open", async () => {
      for (const scenario of ["underpaid", "overpaid"] as const) {
        const result = await sim(scenario);
        expect(result.expected).toEqual(["payment.unresolved"]);
        await receivedFor(result);
        // Everything the receiver got for the transfer, also what named no session: when the
        // settlement worker sees the transfer before the customer's submission, the partner first
        // hears it as unmatched, then linked (docs/testing.md says both).
        const hash = /\((0x[0-9a-f]{64})\)/.exec(result.steps.join("\n"))?.[1];
        expect(hash).toBeDefined();
        const forTransfer = receiver.acknowledged
          .map((request) => JSON.parse(request.rawBody.toString()) as Delivered)
          .filter((event) => event.data.transactionHash === hash);
        expect(typesOf(forTransfer).every((type) => type === "payment.unresolved")).toBe(true);
        expect(forTransfer.at(-1)?.data).toMatchObject({ reason: scenario, sessionId: result.sessionId });
        for (const earlier of forTransfer.slice(0, -1)) {
          expect(earlier.data.reason).toBe("unmatched");
          expect(earlier.data.sessionId ?? null).toBeNull();
        }
        expect((await readSession(stack, result.sessionId)).status).toBe("awaiting_payment");
      }
    });

    it("duplicate: purchase.settled once, then payment.unresolved (duplicate_payment) for the second payment", async () => {
      const result = await sim("duplicate");
      const events = await receivedFor(result);
      expect(typesOf(events)).toEqual(["purchase.settled", "payment.unresolved"]);
      expect(events[1]?.data.reason).toBe("duplicate_payment");
    });

    it("wrong-token: the customer's submission is refused (wrong_token) and the partner hears nothing", async () => {
      const result = await sim("wrong-token");
      expect(result.expected).toEqual([]);
      expect(result.steps.join("\n")).toMatch(/submitted the hash as the customer would: 422 wrong_token/);
      // A later event of the same partner arrived, so this order's silence is not a delivery delay.
      const later = await sim("underpaid");
      await receivedFor(later);
      expect(receiver.acknowledged.some((request) => request.rawBody.toString().includes(result.orderId))).toBe(false);
      expect((await readSession(stack, result.sessionId)).status).toBe("awaiting_payment");
    });

    it("relayed: the hosted gasless route relays an EIP-3009 authorization and the order settles", async () => {
      const result = await sim("relayed");
      const events = await receivedFor(result);
      expect(typesOf(events)).toEqual(["purchase.settled"]);
      expect(result.steps.join("\n")).toContain("EIP-3009");
      const order = await (await stack.partnerFetch(`/v1/orders/${result.orderId}`)).json();
      expect(order.payment.relay).not.toBeNull();
    });

    it("refund: settled, then a refund created, ready and succeeded from the payment address", async () => {
      const result = await sim("refund");
      const events = await receivedFor(result);
      expect(typesOf(events)).toEqual(["purchase.settled", "refund.created", "refund.ready", "refund.succeeded"]);
    });

    it("reward: settled, then a reward granted and claimed with the service's voucher", async () => {
      const result = await sim("reward");
      const events = await receivedFor(result);
      expect(typesOf(events)).toEqual(["purchase.settled", "reward.claimed"]);
    });

    it("reorg: settled, reorged out (payment.reorged) and back (payment.restored)", async () => {
      const result = await sim("reorg");
      const events = await receivedFor(result);
      expect(typesOf(events)).toEqual(["purchase.settled", "payment.reorged", "payment.restored"]);
    });

    it("outage: the node stopped with a payment sent into it; after it resumes the order settles once", async () => {
      const result = await sim("outage", { outageMs: 5_000 });
      const events = await receivedFor(result);
      expect(typesOf(events)).toEqual(["purchase.settled"]);
    });

    it("an existing session through the CLI: --session, what it did and which events, as printed", async () => {
      const session = await createSession(stack, { certificate: { enabled: false } });
      const printed = await run("npx", ["tsx", "scripts/simulate.ts", "overpaid", "--session", session.id], {
        env: { ...process.env, DATA_DIR: stack.dataDir },
        timeout: 90_000,
      });
      expect(printed.stdout).toContain(`using session ${session.id} (awaiting_payment)`);
      expect(printed.stdout).toContain(
        `the partner receives for order ${session.orderId} (session ${session.id}): payment.unresolved`,
      );
      expect(printed.stdout).toMatch(/evt_\S+ payment\.unresolved \(reason overpaid\)/);
      const relayed = await run("npx", ["tsx", "scripts/simulate.ts", "relayed", "--session", session.id], {
        env: { ...process.env, DATA_DIR: stack.dataDir },
        timeout: 90_000,
      }).catch((error: { code: number; stderr: string }) => error);
      expect(relayed).toMatchObject({ code: 1 });
      expect((relayed as { stderr: string }).stderr).toContain("--client-token");
    });

    // Last: it moves the chain clock forward for good (Anvil's never goes back).
    it("late: a payment mined after the session expired is payment.unresolved (late)", async () => {
      const result = await sim("late");
      const events = await receivedFor(result);
      expect(typesOf(events)).toContain("payment.unresolved");
      expect(events.find((event) => event.type === "payment.unresolved")?.data).toMatchObject({
        reason: "late",
        sessionId: result.sessionId,
      });
      // The service expires sessions by the wall clock, which the scenario does not move: the
      // session.expired docs/testing.md names comes after the run, at the session's expiresAt.
      expect(typesOf(events)).not.toContain("session.expired");
      expect((await readSession(stack, result.sessionId)).status).toBe("awaiting_payment");
    });

    // After late: a renewal moves the chain's clock an hour ahead for good.
    describe("subscriptions (issue 44)", () => {
      const subscriptionEvents = (subscriptionId: string) =>
        receiver.acknowledged
          .map((request) => JSON.parse(request.rawBody.toString()) as Delivered)
          .filter((event) => event.data.subscriptionId === subscriptionId);
      const delivered = (subscriptionId: string, types: string[]) =>
        waitFor(
          async () => {
            const got = subscriptionEvents(subscriptionId);
            return types.every((type) => got.some((event) => event.type === type)) ? got : undefined;
          },
          { what: `${types.join(", ")} delivered for ${subscriptionId}` },
        );
      let subscriptionId: string;

      it("subscription: a new customer subscribes with signatures only to the partner's subscription; activated, then period 0 charged", async () => {
        await expect(simulateSubscription({ local: stack.local, scenario: "renewal" })).rejects.toThrow(/--subscription sub_/);
        // As docs/subscriptions.md's walk: the shop creates it, the simulated customer takes its link's token.
        const created = await (
          await stack.partnerFetch("/v1/subscriptions", {
            method: "POST",
            json: {
              externalCustomerId: "walk-1",
              productName: "Hourly plan",
              amount: "2000000",
              interval: { seconds: 3600 },
              idempotencyKey: "simulate-walk-1",
            },
          })
        ).json();
        const result = await simulateSubscription({
          local: stack.local,
          scenario: "subscription",
          subscriptionId: created.id,
          clientToken: created.clientToken,
          timeoutMs: 60_000,
        });
        subscriptionId = result.subscriptionId;
        expect(subscriptionId).toBe(created.id);
        expect(result.expected).toEqual(["subscription.activated", "subscription.charged"]);
        // Signatures only: the customer's wallet never paid gas.
        expect(await stack.publicClient.getBalance({ address: result.subscriber })).toBe(0n);
        expect(await stack.publicClient.getTransactionCount({ address: result.subscriber })).toBe(0);
        const events = await delivered(subscriptionId, result.expected);
        expect(typesOf(events)).toEqual(["subscription.activated", "subscription.charged"]);
        expect(events[1]?.data).toMatchObject({ periodIndex: 0, amount: "2000000" });
        expect(events[1]?.data.orderId).toMatch(/^ord_/);
      });

      it("renewal through the CLI: the chain's clock moved to the next period, period 1 charged", async () => {
        const printed = await run("npx", ["tsx", "scripts/simulate.ts", "renewal", "--subscription", subscriptionId], {
          env: { ...process.env, DATA_DIR: stack.dataDir },
          timeout: 90_000,
        });
        expect(printed.stdout).toContain(`using subscription ${subscriptionId} (active)`);
        expect(printed.stdout).toMatch(/moved the chain's clock \d+ s forward to the next period/);
        expect(printed.stdout).toMatch(/the worker charged period 1: charge sch_\S+, order ord_/);
        expect(printed.stdout).toMatch(/evt_\S+ subscription\.charged \(period 1, order ord_\S+\)/);
        const charges = await waitFor(
          async () => {
            const charged = subscriptionEvents(subscriptionId).filter((event) => event.type === "subscription.charged");
            return charged.length === 2 ? charged : undefined;
          },
          { what: "the second charge delivered" },
        );
        expect(charges.map((event) => event.data.periodIndex)).toEqual([0, 1]);
      });

      it("renewal-failure: the wallet emptied, the next period's charge fails (insufficient_balance) and it is past_due", async () => {
        const result = await simulateSubscription({ local: stack.local, scenario: "renewal-failure", timeoutMs: 60_000 });
        expect(result.expected).toEqual([
          "subscription.activated",
          "subscription.charged",
          "subscription.charge_failed",
          "subscription.past_due",
        ]);
        expect(result.customerUrl).toMatch(new RegExp(`/subscription/${result.subscriptionId}#st=st_`));
        const events = await delivered(result.subscriptionId, result.expected);
        const failed = events.find((event) => event.type === "subscription.charge_failed");
        expect(failed?.data).toMatchObject({ periodIndex: 1, failureReason: "insufficient_balance" });
        expect(failed?.data.nextRetryAt).toEqual(expect.any(String));
        const read = await (await stack.partnerFetch(`/v1/subscriptions/${result.subscriptionId}`)).json();
        expect(read.status).toBe("past_due");
        expect(read.charges.map((charge: { status: string }) => charge.status)).toEqual(["paid", "failed"]);
      });
    });
  });

  describe("only on Anvil", () => {
    let fake: Server;
    beforeAll(async () => {
      // A node that says it is Geth on Base: what a real network's RPC answers.
      fake = createServer((req, res) => {
        let body = "";
        req.on("data", (chunk) => {
          body += chunk;
        });
        req.on("end", () => {
          const { id, method } = JSON.parse(body) as { id: number; method: string };
          const result = method === "web3_clientVersion" ? "Geth/v1.14.0-stable/linux-amd64/go1.22" : "0x2105";
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", id, result }));
        });
      });
      await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    });
    afterAll(() => new Promise<void>((resolve) => fake.close(() => resolve())));

    it("refuses a node that is not Anvil and an unknown scenario, sending nothing", async () => {
      const before = await stack.publicClient.getBlockNumber({ cacheTime: 0 });
      const rpcUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
      const refused = simulate({ local: { ...stack.local, rpcUrl }, dataDir: stack.dataDir, scenario: "underpaid" });
      await expect(refused).rejects.toBeInstanceOf(SimulationRefused);
      await expect(refused).rejects.toThrow(/only the local chain or its fork .* is Geth\/v1\.14\.0/);
      await expect(sim("rugpull")).rejects.toThrow(/unknown scenario "rugpull"/);
      expect(await stack.publicClient.getBlockNumber({ cacheTime: 0 })).toBe(before);
    });
  });
});
