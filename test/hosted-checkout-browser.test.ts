import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { BrowserContext, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeFindings, type Chromium, freshArtifacts, launchChromium, requireChromium } from "./support/browser.js";
import { createSession, readOrder } from "./support/checkout-helpers.js";
import { closeServer } from "./support/close-server.js";
import { expectJson } from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// The hosted checkout in headless Chromium (Debian's package through playwright-core),
// opened standalone from the session's `url`, with two confirmations so the pending
// state shows. Every state is screenshotted at 1280 and 390 px into test-artifacts/
// (not committed) and audited with axe-core.

const ARTIFACTS = freshArtifacts("hosted-checkout");
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

let stack: TestStack;
let context: BrowserContext;
let chromium: Chromium | undefined;
let shopServer: Server;
let shopOrigin: string;
const requests: Request[] = [];
const tokens: string[] = [];
let releaseThanks: () => void = () => undefined;
const shopAnswersThanks = new Promise<void>((resolve) => {
  releaseThanks = resolve;
});

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack({ env: { LOCAL_CONFIRMATIONS: "2" } });
  // The shop's own pages (successUrl, cancelUrl) on another origin.
  shopServer = createServer(async (request, response) => {
    // The shop answers the success page only once the test has looked at the settled
    // state: the page's timed redirect then cannot replace it mid-screenshot on a slow machine.
    if (request.url?.startsWith("/thanks")) await shopAnswersThanks;
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    response.end(
      `<!doctype html><html lang="en"><title>Shop</title><h1>Shop page ${request.url?.replace(/[<>&"]/g, "")}</h1></html>`,
    );
  });
  await new Promise<void>((resolve) => shopServer.listen(0, "127.0.0.1", resolve));
  shopOrigin = `http://127.0.0.1:${(shopServer.address() as { port: number }).port}`;

  await expectJson(
    await stack.partnerFetch("/v1/branding", {
      method: "PATCH",
      json: {
        displayName: "Harbour Goods",
        accentColor: "#1a7f37",
        supportUrl: `${shopOrigin}/help`,
        supportEmail: "help@harbour.example",
      },
    }),
    200,
  );
  const logo =
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 40"><rect width="40" height="40" rx="8" fill="#1a7f37"/>' +
    '<path d="M8 26 L20 12 L32 26 Z" fill="#ffffff"/></svg>';
  const uploaded = await fetch(`${stack.ponder.baseUrl}/v1/branding/logo`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${stack.local.partner.apiKey}`, "Content-Type": "image/svg+xml" },
    body: logo,
  });
  await expectJson(uploaded, 200);

  chromium = await launchChromium("hosted", WIDE);
  context = chromium.context;
  context.on("request", (request) => requests.push(request));
}, 240_000);

afterAll(async () => {
  releaseThanks();
  // The client token never reached a URL, a Referer or the service's log.
  for (const token of tokens) {
    for (const request of requests) {
      expect(request.url()).not.toContain(token);
      expect(request.headers().referer ?? "").not.toContain(token);
    }
    expect(stack.ponder.output()).not.toContain(token);
  }
  // No request left our origin, except the navigations to the shop's own pages.
  const foreign = requests
    .map((request) => new URL(request.url()))
    .filter((url) => url.origin !== stack.ponder.baseUrl && url.origin !== shopOrigin);
  expect(foreign.map(String)).toEqual([]);
  for (const request of requests.filter((r) => new URL(r.url()).origin === shopOrigin)) {
    expect(request.isNavigationRequest()).toBe(true);
  }
  await chromium?.close();
  await closeServer(shopServer);
  await stack?.stop();
});

/** Screenshots at 1280 and 390 px; at 390 nothing may overflow sideways; axe finds no violation at either. */
async function captureState(page: Page, name: string) {
  for (const [label, viewport] of [
    ["1280", WIDE],
    ["390", PHONE],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined))));
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${label}.png`), fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, `${name} at ${label} px overflows sideways`).toBeLessThanOrEqual(0);
    const violations = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${label}.json`), { blockingOnly: false });
    expect(violations, `${name} at ${label} px: accessibility violations`).toEqual([]);
  }
  await page.setViewportSize(WIDE);
}

async function openSession(overrides: Record<string, unknown> = {}) {
  const session = (await createSession(stack, {
    shippingRequired: false,
    totalPriceUsdc: "25000000",
    lineItems: [
      { externalProductId: "tee", name: "Blue organic tee", quantity: 1, unitPriceUsdc: "20000000" },
      { externalProductId: "socks", name: "Wool socks", quantity: 2, unitPriceUsdc: "2500000" },
    ],
    successUrl: `${shopOrigin}/thanks?session={CHECKOUT_SESSION_ID}`,
    cancelUrl: `${shopOrigin}/cart`,
    customer: { email: "ada@example.com", name: "Ada Lovelace" },
    ...overrides,
  })) as Awaited<ReturnType<typeof createSession>> & { url: string };
  tokens.push(session.clientToken);
  const page = await context.newPage();
  await page.goto(session.url);
  return { session, page };
}

const state = (page: Page, name: string) => page.waitForSelector(`#checkout[data-state="${name}"]`, { timeout: 30_000 });

describe("the standalone hosted checkout", () => {
  it("is opened from its url, paid with the test button, shows the pending state and lands on successUrl", async () => {
    const { session, page } = await openSession();
    // The fragment is gone from the address bar (and the history entry).
    await state(page, "awaiting_details");
    expect(page.url()).toBe(`${stack.ponder.baseUrl}/checkout/${session.id}`);
    expect(await page.evaluate(() => location.hash)).toBe("");
    await expect.poll(() => page.locator("#merchant-name").textContent()).toBe("Harbour Goods");
    // The logo has no box until its image arrived (a second request): wait for it, do not race it.
    await expect.poll(() => page.locator("#merchant-logo").isVisible(), { timeout: 60_000 }).toBe(true);
    expect(await page.locator("#back-link").getAttribute("href")).toBe(`${shopOrigin}/cart`);
    expect(await page.locator("#back-link").textContent()).toBe("Back to Harbour Goods");
    expect(await page.locator("#line-items").textContent()).toContain("2 × Wool socks");
    expect(await page.locator("#order-total").textContent()).toBe("25.00 USDC");
    expect(await page.locator("#email").inputValue()).toBe("ada@example.com");
    await captureState(page, "01-details");

    await page.getByRole("button", { name: "Continue to payment" }).click();
    await state(page, "awaiting_payment");
    await page.locator("#qr svg").waitFor();
    expect(await page.locator("#amount").textContent()).toBe(
      `${BigInt(session.payment.amount) / 1_000_000n}.${(BigInt(session.payment.amount) % 1_000_000n).toString().padStart(6, "0")}`,
    );
    await page.setViewportSize(PHONE);
    // Mobile first: the wallet link is the primary action, above the QR code.
    const link = await page.locator("#wallet-link").boundingBox();
    const qr = await page.locator("#qr").boundingBox();
    expect(link!.y + link!.height).toBeLessThanOrEqual(qr!.y);
    expect(link!.width).toBeGreaterThan(300);
    // The address wraps between groups of four, each group whole.
    const groups = await page.locator("#recipient-groups .group").allTextContents();
    expect(groups.join("")).toBe(session.payment.recipient);
    await captureState(page, "02-awaiting-payment");

    await page.getByRole("button", { name: "Pay with a test account" }).click();
    await state(page, "payment_pending");
    expect(await page.locator("#pending-message").textContent()).toBe("Payment seen, 1 of 2 confirmations.");
    expect(await page.locator("#payment-step").isHidden()).toBe(true);
    expect(await page.locator("#wallet-link").isVisible()).toBe(false);
    expect(await page.locator("#pending-hash").textContent()).toMatch(/^0x[0-9a-f]{64}$/);
    await captureState(page, "03-payment-pending");

    // The next block confirms it: the confirmation, then the shop's success page.
    await stack.testClient.mine({ blocks: 1 });
    await state(page, "settled");
    expect(await page.locator("#success-link").getAttribute("href")).toBe(`${shopOrigin}/thanks?session=${session.id}`);
    await captureState(page, "04-settled");
    releaseThanks();
    await page.waitForURL(`${shopOrigin}/thanks?session=${session.id}`, { timeout: 30_000 });
    expect((await readOrder(stack, session.orderId)).status).toBe("paid");
    await page.close();
  }, 180_000);

  it("explains a wrong amount; the partner sees it linked to the session and attaches it", async () => {
    const { session, page } = await openSession({ customer: undefined });
    await state(page, "awaiting_details");
    await page.setViewportSize(PHONE);
    await page.getByLabel(/Email/).fill("grace@example.com");
    await page.getByRole("button", { name: "Continue to payment" }).click();
    await state(page, "awaiting_payment");
    // The customer's exchange kept a 1 USDC fee (`npm run pay -- <id> --amount …` does the same).
    const short = BigInt(session.payment.amount) - 1_000_000n;
    const sent = await expectJson(
      await stack.partnerFetch(`/v1/checkout/sessions/${session.id}/test-payment`, {
        method: "POST",
        json: { amount: short.toString() },
      }),
      200,
    );
    expect(sent.submission.problem).toMatchObject({ code: "wrong_amount", recordedForShop: true });
    await state(page, "wrong_amount");
    const explanation = await page.locator("#mismatch").textContent();
    expect(explanation).toContain(`We received ${short / 1_000_000n}.${(short % 1_000_000n).toString().padStart(6, "0")} USDC`);
    expect(explanation).toContain("Your money is not lost");
    expect(explanation).toContain("Harbour Goods, which has been told");
    // The exact amount is still there to send.
    expect(await page.locator("#wallet-link").isVisible()).toBe(true);
    await captureState(page, "05-wrong-amount");

    const listed = await expectJson(await stack.partnerFetch("/v1/payments?status=unresolved"), 200);
    const payment = listed.data.find((row: { sessionId: string }) => row.sessionId === session.id);
    expect(payment).toMatchObject({ orderId: session.orderId, expectedAmount: session.payment.amount, reason: "underpaid" });
    await expectJson(
      await stack.partnerFetch(`/v1/payments/${payment.chainId}/${payment.transactionHash}/${payment.logIndex}/attach`, {
        method: "POST",
        json: { orderId: session.orderId },
      }),
      200,
    );
    await state(page, "settled");
    const order = await readOrder(stack, session.orderId);
    expect(order.amountPaid).toBe(short.toString());
    await page.close();
  }, 180_000);

  it("offers Start again when the session expired, and support contacts", async () => {
    const { session, page } = await openSession();
    await state(page, "awaiting_details");
    // The shop opened a new session for the order: this one is closed.
    await createSession(stack, {
      shippingRequired: false,
      externalOrderId: session.externalOrderId,
      idempotencyKey: `again-${session.id}`,
    });
    await state(page, "expired");
    expect(await page.getByRole("link", { name: "Start again" }).getAttribute("href")).toBe(`${shopOrigin}/cart`);
    expect(await page.locator("#support-email").textContent()).toBe("help@harbour.example");
    await captureState(page, "06-expired");
    await page.close();
  }, 120_000);

  it("says what to do when the link is broken", async () => {
    const session = await createSession(stack, { shippingRequired: false });
    const page = await context.newPage();
    await page.goto(`${stack.ponder.baseUrl}/checkout/${session.id}#ct=not-the-token`);
    await state(page, "error");
    expect(page.url()).toBe(`${stack.ponder.baseUrl}/checkout/${session.id}`);
    await captureState(page, "07-invalid-link");
    await page.goto(`${stack.ponder.baseUrl}/checkout/${session.id}`);
    await state(page, "error");
    expect(await page.locator("#closed-message").textContent()).toContain("Open this checkout from the link");
    await page.close();
  }, 60_000);
});
