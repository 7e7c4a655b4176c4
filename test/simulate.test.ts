import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulationRefused, type SimulationResult, simulate } from "../local/simulate.js";
import { simulateSubscription } from "../local/simulate-subscription.js";
import { createSession, readSession } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// Scenario triggers (issue 29): each scenario of `npm run simulate` against one real
// stack, called as the CLI calls it, and what the partner's own webhook receiver got
// for the scenario's order: the real events, delivered and signed, nothing else.

const run = promisify(execFile);
let stack: TestStack;
let receiver: WebhookReceiver;

type Delivered = { id: string; type: string; data: Record<string, unknown> };

beforeAll(async () => {
  stack = await startTestStack();
  receiver = await startWebhookReceiver();
  const endpoint = await stack.partnerFetch("/v1/webhook-endpoints", {
    method: "POST",
    json: { url: receiver.url("/simulate"), events: ["*"] },
  });
  expect(endpoint.status).toBe(201);
}, 420_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
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
