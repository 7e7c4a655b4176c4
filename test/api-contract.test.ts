import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { documentedCodes, type OpenApiDocument } from "../api/http/openapi-contract.js";
import { PROBLEM_CODES } from "../api/http/problem-catalogue.js";
import { axeFindings, freshArtifacts, launchChromium } from "./support/browser.js";
import { portalWallet } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The API contract against the running service (the document's own rules, swagger-parser and
// redocly's, are checked without a chain in test/unit/openapi-document.test.ts): every operation answers only statuses and problem codes its
// document lists (each is called once unauthenticated or with a bad body, and the main partner
// and browser operations once as they should be), every problem `type` link resolves, and the
// Scalar reference at /docs renders from our own origin only (Chromium, axe-core, screenshots
// at 1280 and 390 px in test-artifacts/api-docs/, not committed).

const ARTIFACTS = freshArtifacts("api-docs");

let stack: TestStack;
let openApi: OpenApiDocument;
const base = () => stack.ponder.baseUrl;

beforeAll(async () => {
  stack = await startTestStack();
  openApi = (await (await fetch(`${base()}/openapi.json`)).json()) as OpenApiDocument;
});
afterAll(async () => {
  await stack?.stop();
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
      const outside = requested.filter((url) => !url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:"));
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
