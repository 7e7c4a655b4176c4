import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createClient,
  createEventReceiver,
  SettlementApiError,
  type SettlementClient,
  SettlementConnectionError,
  type SettlementEvent,
  toBaseUnits,
} from "../client/src/index.js";
import { memoryStore } from "./support/memory-event-store.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The partner library against a running service; its functions that need none (amounts,
// constructEvent, the event receiver) are in test/unit/client-events.test.ts.
let stack: TestStack;
let client: SettlementClient;

beforeAll(async () => {
  stack = await startTestStack();
  client = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.local.baseUrl });
});
afterAll(async () => {
  await stack?.stop();
});

function sessionParams(overrides: Partial<Parameters<SettlementClient["checkout"]["sessions"]["create"]>[0]> = {}) {
  const externalOrderId = `lib-${randomUUID()}`;
  return {
    externalOrderId,
    externalProductId: "sku-mug",
    productName: "Mug",
    productCategory: "kitchen",
    quantity: 1,
    totalPriceUsdc: 25_000_123n,
    shippingRequired: false,
    certificate: { enabled: false },
    idempotencyKey: `create-${externalOrderId}`,
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("partner operations against the running service", () => {
  it("reads the service health", async () => {
    const health = await client.health();
    expect(health.status).toBe("ok");
    expect(health.chains).toEqual([expect.objectContaining({ network: "local", chainId: 31337 })]);
  });

  it("creates a session from a bigint total sent as a decimal string, and reads it back", async () => {
    const params = sessionParams({ totalPriceUsdc: 25_000_123n });
    const session = await client.checkout.sessions.create(params);
    expect(session).toMatchObject({
      status: "awaiting_payment",
      network: "local",
      chainId: 31337,
      externalOrderId: params.externalOrderId,
    });
    expect(session.clientToken).toMatch(/^ct_/);
    expect(session.payment.totalPriceUsdc).toBe("25000123");
    const reference = toBaseUnits(session.payment.amount) - 25_000_123n;
    expect(reference >= 1n && reference <= 9_999n).toBe(true);

    const read = await client.checkout.sessions.retrieve(session.id);
    expect(read).toMatchObject({ id: session.id, orderId: session.orderId, payment: session.payment });
    expect(read).not.toHaveProperty("clientToken");

    // Same key, same body: the same session with a fresh browser token.
    const again = await client.checkout.sessions.create(params);
    expect(again.id).toBe(session.id);

    const fromString = await client.checkout.sessions.create(sessionParams({ totalPriceUsdc: "12000000" }));
    expect(fromString.payment.totalPriceUsdc).toBe("12000000");
  });

  it("refuses floats before sending anything", async () => {
    const error = await rejection(client.checkout.sessions.create(sessionParams({ totalPriceUsdc: 25.5 as unknown as bigint })));
    expect(error).toBeInstanceOf(TypeError);
    expect(String(error)).toMatch(/bigint/);
  });

  it("turns problems into typed errors with the stable code", async () => {
    const wrongKey = createClient({ apiKey: "sk_test_nope", network: "local", baseUrl: stack.local.baseUrl });
    const unauthenticated = await rejection(wrongKey.orders.retrieve("ord_x"));
    expect(unauthenticated).toBeInstanceOf(SettlementApiError);
    expect(unauthenticated).toMatchObject({ status: 401, code: "unauthenticated" });

    const notFound = await rejection(client.checkout.sessions.retrieve("cs_does_not_exist"));
    expect(notFound).toMatchObject({ name: "SettlementApiError", status: 404, code: "not_found" });
    expect((notFound as SettlementApiError).detail).toContain("cs_does_not_exist");
    expect((notFound as SettlementApiError).requestId).toBeTruthy();

    const params = sessionParams();
    await client.checkout.sessions.create(params);
    const conflict = await rejection(client.checkout.sessions.create({ ...params, totalPriceUsdc: 1n }));
    expect(conflict).toMatchObject({ status: 409, code: "idempotency_conflict" });

    const invalid = await rejection(client.checkout.sessions.create(sessionParams({ quantity: 0 })));
    expect(invalid).toMatchObject({ status: 400, code: "invalid_request" });
    expect((invalid as SettlementApiError).problem.errors).toEqual([expect.objectContaining({ path: "quantity" })]);

    const offline = createClient({ apiKey: "k", network: "local", baseUrl: "http://127.0.0.1:9", timeoutMs: 2_000 });
    const unreachable = await rejection(offline.health());
    expect(unreachable).toBeInstanceOf(SettlementConnectionError);
    expect(unreachable).toMatchObject({ code: "connection_failed" });
  });

  it("creates, reads, lists and cancels a subscription; its six events are in the event union", async () => {
    const created = await client.subscriptions.create({
      externalCustomerId: "cus-lib",
      productName: "Weekly box",
      amount: 4_000_000n,
      interval: "week",
      idempotencyKey: `sub-${randomUUID()}`,
    });
    expect(created).toMatchObject({ status: "awaiting_authorization", amount: "4000000", interval: "week" });
    expect(created.url).toContain(`/subscribe/${created.id}#st=`);
    expect(await client.subscriptions.retrieve(created.id)).toMatchObject({ id: created.id, charges: [] });
    expect(await client.subscriptions.charges(created.id)).toEqual([]);
    const listed = await client.subscriptions.list({ status: "awaiting_authorization", limit: 100 });
    expect(listed.data.map((subscription) => subscription.id)).toContain(created.id);
    const cancelled = await client.subscriptions.cancel(created.id);
    expect(cancelled).toMatchObject({ status: "cancelled", cancelledBy: "partner" });
    expect((await client.subscriptions.settings()).retryDelaysSeconds).toEqual([3_600, 21_600, 86_400, 259_200]);
    const refused = await rejection(client.subscriptions.updateSettings({ retryDelaysSeconds: [1] }));
    expect(refused).toMatchObject({ status: 400, code: "invalid_request" });
    const missing = await rejection(client.subscriptions.retrieve("sub_does_not_exist"));
    expect(missing).toMatchObject({ status: 404, code: "not_found" });
    // Compile-time as much as run-time: each type is a member of the generated union.
    const types: SettlementEvent["type"][] = [
      "subscription.activated",
      "subscription.charged",
      "subscription.charge_failed",
      "subscription.past_due",
      "subscription.cancelled",
      "subscription.ended",
    ];
    expect(types).toHaveLength(6);
  });

  it("settles a payment, then reads, fulfils and lists it (orders, transfers, payments)", async () => {
    const session = await client.checkout.sessions.create(sessionParams());
    const paid = await stack.payUsdc({
      from: 2,
      to: session.payment.recipient as Address,
      amount: toBaseUnits(session.payment.amount),
    });
    await waitFor(async () => ((await client.checkout.sessions.retrieve(session.id)).status === "settled" ? true : undefined), {
      what: "settlement",
    });

    const order = await client.orders.retrieve(session.orderId);
    expect(order).toMatchObject({ status: "paid", externalOrderId: session.externalOrderId, amountPaid: session.payment.amount });
    expect(order.payment?.transactionHash).toBe(paid.hash);

    const byHash = await client.transfers.list({ txHash: paid.hash });
    expect(byHash.data).toEqual([expect.objectContaining({ transactionHash: paid.hash, amount: session.payment.amount })]);
    const byBlock = await client.transfers.list({ fromBlock: paid.blockNumber, toBlock: paid.blockNumber });
    expect(byBlock.data.map((transfer) => transfer.transactionHash)).toContain(paid.hash);
    const everyTransfer: string[] = [];
    for await (const transfer of client.transfers.iterate({ limit: 1 })) everyTransfer.push(transfer.transactionHash);
    expect(everyTransfer).toContain(paid.hash);

    const settledPayments: string[] = [];
    for await (const payment of client.payments.iterate({ status: "settled", limit: 1 }))
      settledPayments.push(payment.transactionHash);
    expect(settledPayments).toContain(paid.hash);
    expect((await client.payments.list({ status: "unresolved" })).data.map((payment) => payment.transactionHash)).not.toContain(
      paid.hash,
    );

    const fulfilled = await client.orders.fulfil(session.orderId, {
      fulfilmentReference: "parcel-1",
      idempotencyKey: "fulfil-1",
    });
    expect(fulfilled.fulfilment?.reference).toBe("parcel-1");
    expect(
      (await client.orders.fulfil(session.orderId, { fulfilmentReference: "parcel-1", idempotencyKey: "fulfil-1" })).status,
    ).toBe(fulfilled.status);
    const twice = await rejection(
      client.orders.fulfil(session.orderId, { fulfilmentReference: "parcel-2", idempotencyKey: "fulfil-2" }),
    );
    expect(twice).toMatchObject({ status: 409, code: "order_already_fulfilled" });
  });

  it("manages webhook endpoints and events: real deliveries verify, redelivery is a no-op duplicate, rotation keeps verifying", async () => {
    const secrets: string[] = [];
    const store = memoryStore();
    const applied: SettlementEvent[] = [];
    const answered: { id: string; status: number }[] = [];
    const receive = createEventReceiver({ secret: secrets, store, apply: (event) => void applied.push(event) });
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const started = serve(
        {
          port: 0,
          hostname: "127.0.0.1",
          fetch: async (request) => {
            const response = await receive(request);
            answered.push({ id: request.headers.get("service-event-id") ?? "", status: response.status });
            return response;
          },
        },
        () => resolve(started),
      );
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
      const endpoint = await client.webhookEndpoints.create({ url, events: ["purchase.settled", "order.fulfilled"] });
      expect(endpoint.secret).toMatch(/^whsec_/);
      secrets.push(endpoint.secret);
      expect((await client.webhookEndpoints.list()).data.map((item) => item.id)).toContain(endpoint.id);
      const read = await client.webhookEndpoints.retrieve(endpoint.id);
      expect(read.url).toBe(url);
      expect([...read.events].sort()).toEqual(["order.fulfilled", "purchase.settled"]);
      expect(await client.webhookEndpoints.retrieve(endpoint.id)).not.toHaveProperty("secret");

      const session = await client.checkout.sessions.create(sessionParams());
      await stack.payUsdc({ from: 3, to: session.payment.recipient as Address, amount: toBaseUnits(session.payment.amount) });
      const settled = await waitFor(async () => applied.find((event) => event.data.orderId === session.orderId), {
        what: "purchase.settled delivery",
      });
      expect(settled).toMatchObject({ type: "purchase.settled", data: { externalOrderId: session.externalOrderId } });
      expect(store.log).toEqual([`record ${settled.id}`, `processed ${settled.id}`]);

      // The reconciliation feed: one page, and every page through the cursor.
      const page = await client.events.list({ type: "purchase.settled" });
      expect(page.data.map((event) => event.id)).toContain(settled.id);
      const all = await client.events.list({ limit: 500 });
      const iterated: string[] = [];
      for await (const event of client.events.iterate({ limit: 2 })) iterated.push(event.id);
      expect(iterated).toEqual(all.data.map((event) => event.id));
      const afterFirst = await client.events.list({ after: all.data[0]!.id, limit: 500 });
      expect(afterFirst.data.map((event) => event.id)).toEqual(iterated.slice(1));
      const resumed: string[] = [];
      for await (const event of client.events.iterate({ after: all.data[0]!.id, limit: 1 })) resumed.push(event.id);
      expect(resumed).toEqual(iterated.slice(1));
      expect(await client.events.retrieve(settled.id)).toEqual(settled);

      const deliveries = await waitFor(async () => {
        const list = await client.events.deliveries(settled.id);
        return list[0]?.status === "delivered" ? list : undefined;
      });
      expect(deliveries).toEqual([
        expect.objectContaining({ endpointId: endpoint.id, status: "delivered", lastStatusCode: 200 }),
      ]);
      expect(deliveries[0]!.attempts.length).toBeGreaterThanOrEqual(1);

      // Redelivery: the same id again is answered 204 and not applied a second time.
      const queued = await client.events.redeliver(settled.id, { endpointId: endpoint.id });
      expect(queued).toEqual([expect.objectContaining({ endpointId: endpoint.id, status: "pending" })]);
      await waitFor(
        async () => (answered.some((answer) => answer.id === settled.id && answer.status === 204) ? true : undefined),
        {
          what: "redelivery",
        },
      );
      expect(applied.filter((event) => event.id === settled.id)).toHaveLength(1);

      // Rotation: the new secret alone verifies while both sign.
      const rotated = await client.webhookEndpoints.rotateSecret(endpoint.id, { previousSecretExpiresInSeconds: 600 });
      expect(rotated.secret).not.toBe(endpoint.secret);
      secrets.splice(0, secrets.length, rotated.secret);
      store.processed.delete(settled.id);
      await client.events.redeliver(settled.id, { endpointId: endpoint.id });
      await waitFor(async () => (applied.filter((event) => event.id === settled.id).length === 2 ? true : undefined), {
        what: "redelivery verified with the rotated secret",
      });

      expect(await client.webhookEndpoints.delete(endpoint.id)).toEqual({ id: endpoint.id, deleted: true });
      expect((await client.webhookEndpoints.list()).data.map((item) => item.id)).not.toContain(endpoint.id);
      expect(await rejection(client.webhookEndpoints.retrieve(endpoint.id))).toMatchObject({ status: 404, code: "not_found" });
    } finally {
      server.close();
    }
  });
});
