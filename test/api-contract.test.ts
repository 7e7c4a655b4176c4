import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { documentedCodes, type OpenApiDocument } from "../api/http/openapi-contract.js";
import { PROBLEM_CODES } from "../api/http/problem-catalogue.js";
import {
  createClient,
  createEventReceiver,
  SettlementApiError,
  type SettlementClient,
  SettlementConnectionError,
  type SettlementEvent,
  toBaseUnits,
} from "../client/src/index.js";
import { axeFindings, freshArtifacts, launchChromium } from "./support/browser.js";
import { memoryStore } from "./support/memory-event-store.js";
import { portalWallet } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// One stack of the default configuration for what were 2 files (api-contract, client-library): a describe
// block each, run in that order, each reading the stack through sharedStack(). One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("api-contract", () => {
  // The API contract against the running service (the document's own rules, swagger-parser and
  // redocly's, are checked without a chain in test/unit/openapi-document.test.ts): every operation
  // answers only statuses and problem codes its document lists (each is called once unauthenticated or with a bad body, and the main partner
  // and browser operations once as they should be), every problem `type` link resolves, and the
  // Scalar reference at /docs renders from our own origin only (Chromium, axe-core, screenshots
  // at 1280 and 390 px in test-artifacts/api-docs/, not committed).

  const ARTIFACTS = freshArtifacts("api-docs");

  let stack: TestStack;
  let openApi: OpenApiDocument;
  const base = () => stack.ponder.baseUrl;

  beforeAll(async () => {
    stack = sharedStack();
    openApi = (await (await fetch(`${base()}/openapi.json`)).json()) as OpenApiDocument;
  });

  type Operation = OpenApiDocument["paths"][string][string];
  const violations: string[] = [];

  /** Records a violation when the answer's status, or its problem code, is not in the operation's document. */
  async function check(
    method: string,
    path: string,
    operation: Operation,
    response: Response,
  ): Promise<{ status: number; body: unknown }> {
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    const body = type.includes("json") && text.length > 0 ? JSON.parse(text) : text;
    const label = `${method.toUpperCase()} ${path} → ${response.status}`;
    if (operation.responses[String(response.status)] === undefined) violations.push(`${label}: status not documented`);
    if (type.includes("application/problem+json")) {
      const code = (body as { code?: string }).code ?? "";
      if (!documentedCodes(operation, response.status).includes(code)) violations.push(`${label}: code ${code} not documented`);
    }
    return { status: response.status, body };
  }

  /** A concrete URL for a path template; `{...}` parameters get harmless unknown values. */
  function concrete(path: string): string {
    return path
      .replace("{chainId}", "31337")
      .replace("{transactionHash}", `0x${"ab".repeat(32)}`)
      .replace("{logIndex}", "0")
      .replace(/\{address\}/, `0x${"12".repeat(20)}`)
      .replace(/\{[^}]+\}/g, "unknown-id");
  }

  describe("the OpenAPI document", () => {
    it("splits into partner, browser and portal documents", async () => {
      for (const [audience, sample] of [
        ["partner", "/v1/checkout/sessions"],
        ["browser", "/v1/public/checkout/payments"],
        ["portals", "/api/admin/partners"],
      ] as const) {
        const part = (await (await fetch(`${base()}/openapi/${audience}.json`)).json()) as OpenApiDocument;
        expect(Object.keys(part.paths)).toContain(sample);
        expect(Object.keys(part.paths).length).toBeLessThan(Object.keys(openApi.paths).length);
      }
      expect((await fetch(`${base()}/openapi/nobody.json`)).status).toBe(404);
    });
  });

  describe("every operation answers only what its document lists", () => {
    it("refused calls: no credentials, bad body", async () => {
      let calls = 0;
      for (const [path, methods] of Object.entries(openApi.paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          const url = `${base()}${concrete(path)}`;
          const init: RequestInit = { method: method.toUpperCase() };
          if (method !== "get" && method !== "delete") {
            init.headers = { "Content-Type": "application/json" };
            init.body = JSON.stringify({ unexpected: true });
          }
          await check(method, path, operation, await fetch(url, init));
          calls++;
          // Authenticated as the demo partner, with the same bad input, where the operation takes an API key.
          if (operation.security?.some((requirement) => "apiKey" in requirement)) {
            const headers = new Headers(init.headers);
            headers.set("Authorization", `Bearer ${stack.local.partner.apiKey}`);
            await check(method, path, operation, await fetch(url, { ...init, headers }));
            calls++;
          }
        }
      }
      expect(calls).toBeGreaterThan(100);
      expect(violations).toEqual([]);
    });

    it("the partner and browser flow as it should be", async () => {
      const op = (path: string, method: string) => openApi.paths[path]?.[method] as Operation;
      const created = await check(
        "post",
        "/v1/checkout/sessions",
        op("/v1/checkout/sessions", "post"),
        await stack.partnerFetch("/v1/checkout/sessions", {
          method: "POST",
          json: {
            externalOrderId: "contract-1",
            externalProductId: "sku-1",
            productName: "Mug",
            quantity: 1,
            totalPriceUsdc: "25000000",
            paymentMethod: "usdc",
            checkoutMode: "hosted_transfer",
            idempotencyKey: "contract-1",
          },
        }),
      );
      expect(created.status).toBe(201);
      const session = created.body as { id: string; clientToken: string; orderId: string };
      for (const [path, url] of [
        ["/v1/checkout/sessions/{id}", `/v1/checkout/sessions/${session.id}`],
        ["/v1/checkout/sessions", "/v1/checkout/sessions?limit=5"],
        ["/v1/orders/{orderId}", `/v1/orders/${session.orderId}`],
        ["/v1/payments", "/v1/payments?status=unresolved"],
        ["/v1/events", "/v1/events"],
        ["/v1/webhook-endpoints", "/v1/webhook-endpoints"],
        ["/v1/transfers", "/v1/transfers"],
      ] as const) {
        const answer = await check("get", path, op(path, "get"), await stack.partnerFetch(url));
        expect(answer.status, path).toBe(200);
      }
      const browser = (path: string, url: string, json: unknown) =>
        fetch(`${base()}${url}`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(json),
        }).then((response) => check("post", path, op(path, "post"), response));
      expect(
        (
          await browser("/v1/public/checkout/sessions/{id}/validate", `/v1/public/checkout/sessions/${session.id}/validate`, {
            clientToken: session.clientToken,
          })
        ).status,
      ).toBe(200);
      expect(
        (await browser("/checkout/{sessionId}/qr", `/checkout/${session.id}/qr`, { clientToken: session.clientToken })).status,
      ).toBe(200);
      // A hash that is on no block: a documented problem, not an undocumented answer.
      const unknownHash = await browser("/v1/public/checkout/payments", "/v1/public/checkout/payments", {
        clientToken: session.clientToken,
        transactionHash: `0x${"cd".repeat(32)}`,
      });
      expect(unknownHash.status).toBe(404);
      const wrongToken = await browser(
        "/v1/public/checkout/sessions/{id}/validate",
        `/v1/public/checkout/sessions/${session.id}/validate`,
        {
          clientToken: "not-the-token",
        },
      );
      expect(wrongToken.status).toBe(401);
      expect(violations).toEqual([]);
    });
  });

  describe("contract gaps a third-party validator found (issue 29)", () => {
    const op = (path: string, method: string) => openApi.paths[path]?.[method] as Operation;
    const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base()}${url}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...headers },
        body: JSON.stringify(json),
      });

    it("one path per operation: the fulfilment route has no undocumented alias", async () => {
      expect(Object.keys(openApi.paths).filter((path) => /fulfil/.test(path))).toEqual(
        ["/v1/orders/{orderId}/fulfilment", "/api/partner/orders/{orderId}/fulfilment"].filter((path) => path in openApi.paths),
      );
      const answer = await stack.partnerFetch("/v1/orders/unknown-id/fulfillment", {
        method: "POST",
        json: { fulfilmentReference: "x", idempotencyKey: "alias" },
      });
      expect(answer.status).toBe(404);
      expect(((await answer.json()) as { code: string }).code).toBe("not_found");
    });

    it("documents every SIWE rejection code, and a real rejection answers one of them", async () => {
      const siwe = [
        "invalid_challenge",
        "challenge_used",
        "challenge_expired",
        "message_altered",
        "wrong_domain",
        "wrong_uri",
        "wrong_chain",
        "wrong_address",
        "invalid_signature",
      ];
      for (const role of ["investor", "issuer", "admin", "partner"]) {
        const verify = op(`/api/${role}/auth/verify`, "post");
        expect(documentedCodes(verify, 401), role).toEqual(expect.arrayContaining(siwe));
      }
      // A message this service never issued; then a real challenge, altered; then used twice.
      const path = "/api/investor/auth/verify";
      const wallet = portalWallet();
      const forged = await check(
        "post",
        path,
        op(path, "post"),
        await post(path, { message: "hello", signature: `0x${"11".repeat(65)}` }),
      );
      expect(forged.body).toMatchObject({ code: "invalid_challenge" });
      const issued = (await (await post("/api/investor/auth/challenge", { address: wallet.address })).json()) as {
        message: string;
      };
      const altered = issued.message.replace("Sign in to", "Sign into");
      const alteredAnswer = await check(
        "post",
        path,
        op(path, "post"),
        await post(path, { message: altered, signature: await wallet.sign(altered) }),
      );
      expect(alteredAnswer.body).toMatchObject({ code: "message_altered" });
      const signature = await wallet.sign(issued.message);
      expect((await check("post", path, op(path, "post"), await post(path, { message: issued.message, signature }))).status).toBe(
        200,
      );
      const reused = await check("post", path, op(path, "post"), await post(path, { message: issued.message, signature }));
      expect(reused.body).toMatchObject({ code: "challenge_used" });
      expect(violations).toEqual([]);
    });

    it("documents the webhook endpoint creation's 400 codes, and a refused URL answers one of them", async () => {
      const create = op("/v1/webhook-endpoints", "post");
      expect(documentedCodes(create, 400)).toEqual(expect.arrayContaining(["invalid_webhook_url", "invalid_request"]));
      expect(documentedCodes(create, 409)).toContain("too_many_webhook_endpoints");
      const headers = { Authorization: `Bearer ${stack.local.partner.apiKey}` };
      const refused = await check(
        "post",
        "/v1/webhook-endpoints",
        create,
        await post("/v1/webhook-endpoints", { url: "ftp://shop.example/hook" }, headers),
      );
      expect(refused).toMatchObject({ status: 400, body: { code: "invalid_webhook_url" } });
      expect(violations).toEqual([]);
    });

    it("an order settled by an underpaid attach says underpaid: true on the order and in the session list", async () => {
      const created = await stack.partnerFetch("/v1/checkout/sessions", {
        method: "POST",
        json: {
          externalOrderId: "contract-under",
          externalProductId: "sku-1",
          productName: "Mug",
          quantity: 1,
          totalPriceUsdc: "25000000",
          paymentMethod: "usdc",
          checkoutMode: "hosted_transfer",
          idempotencyKey: "contract-under",
        },
      });
      const session = (await created.json()) as {
        id: string;
        orderId: string;
        clientToken: string;
        payment: { recipient: `0x${string}` };
      };
      const { hash } = await stack.payUsdc({ from: 4, to: session.payment.recipient, amount: 24_000_000n });
      // The transfer is linked to the session once the customer submits its hash.
      const payment = await waitFor(
        async () => {
          await post("/v1/public/checkout/payments", {
            clientToken: session.clientToken,
            transactionHash: hash,
          });
          const listed = (await (await stack.partnerFetch("/v1/payments?status=unresolved")).json()) as {
            data: { transactionHash: string; logIndex: number }[];
          };
          return listed.data.find((row) => row.transactionHash === hash.toLowerCase());
        },
        { timeoutMs: 30_000, what: "the unresolved payment" },
      );
      const attach = await stack.partnerFetch(`/v1/payments/${stack.local.chainId}/${hash}/${payment.logIndex}/attach`, {
        method: "POST",
        json: { orderId: session.orderId },
      });
      expect(attach.status).toBe(200);
      const order = await check(
        "get",
        "/v1/orders/{orderId}",
        op("/v1/orders/{orderId}", "get"),
        await stack.partnerFetch(`/v1/orders/${session.orderId}`),
      );
      expect(order.body).toMatchObject({ status: "paid", amountPaid: "24000000", underpaid: true });
      const list = (await (await stack.partnerFetch("/v1/checkout/sessions?limit=20")).json()) as {
        data: { id: string; order: { underpaid: boolean; amountPaid: string | null } }[];
      };
      expect(list.data.find((row) => row.id === session.id)?.order).toMatchObject({ underpaid: true, amountPaid: "24000000" });
      // An order paid in full is not underpaid.
      expect(list.data.filter((row) => row.id !== session.id).every((row) => row.order.underpaid === false)).toBe(true);
      expect(violations).toEqual([]);
    });
  });

  describe("problem type links and /docs", () => {
    it("every problem type resolves to an entry of the catalogue", async () => {
      const answer = await fetch(`${base()}/v1/orders/nope`, {
        headers: { Authorization: `Bearer ${stack.local.partner.apiKey}` },
      });
      const problem = (await answer.json()) as { type: string; code: string };
      expect(problem.type).toBe("/docs/problems#problem-not_found");
      const catalogue = await fetch(new URL(problem.type, base()));
      expect(catalogue.status).toBe(200);
      const page = await catalogue.text();
      for (const code of PROBLEM_CODES) expect(page, code).toContain(`id="problem-${code}"`);
    });

    it("renders the Scalar reference from our own origin (Chromium), with no accessibility violation", async () => {
      const chromium = await launchChromium("docs");
      const browser = chromium.context;
      try {
        const origin = new URL(base()).origin;
        const requested: string[] = [];
        browser.on("request", (request) => {
          requested.push(request.url());
        });
        const page = await browser.newPage();
        await page.setViewportSize({ width: 1280, height: 900 });
        const consoleErrors: string[] = [];
        page.on("console", (message) => {
          if (message.type() === "error") consoleErrors.push(message.text());
        });
        await page.goto(`${base()}/docs`, { waitUntil: "networkidle" });
        await page.screenshot({ path: join(ARTIFACTS, "docs-loaded.png") });
        writeFileSync(join(ARTIFACTS, "console-errors.json"), JSON.stringify(consoleErrors, null, 2));
        await page
          .getByRole("heading", { name: /Partner API/ })
          .first()
          .waitFor({ timeout: 30_000 });
        const outside = requested.filter(
          (url) => !url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:"),
        );
        expect(outside).toEqual([]);
        for (const [label, viewport] of [
          ["1280", { width: 1280, height: 900 }],
          ["390", { width: 390, height: 844 }],
        ] as const) {
          await page.setViewportSize(viewport);
          await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined))));
          await page.screenshot({ path: join(ARTIFACTS, `docs-${label}.png`) });
          const serious = await axeFindings(page, join(ARTIFACTS, `axe-docs-${label}.json`), { blockingOnly: true });
          expect(serious, `/docs at ${label} px`).toEqual([]);
        }
        await page.goto(`${base()}/docs/problems#problem-session_expired`);
        await page.screenshot({ path: join(ARTIFACTS, "problems-1280.png") });
      } finally {
        await chromium.close();
      }
    });
  });
});

describe("client-library", () => {
  // The partner library against a running service; its functions that need none (amounts,
  // constructEvent, the event receiver) are in test/unit/client-events.test.ts.
  let stack: TestStack;
  let client: SettlementClient;

  beforeAll(async () => {
    stack = sharedStack();
    client = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.local.baseUrl });
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
      const error = await rejection(
        client.checkout.sessions.create(sessionParams({ totalPriceUsdc: 25.5 as unknown as bigint })),
      );
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
      expect(order).toMatchObject({
        status: "paid",
        externalOrderId: session.externalOrderId,
        amountPaid: session.payment.amount,
      });
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
});
