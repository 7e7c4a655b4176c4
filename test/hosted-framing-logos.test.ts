import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { type Chromium, freshArtifacts, launchChromium } from "./support/browser.js";
import { createSession } from "./support/checkout-helpers.js";
import { closeServer } from "./support/close-server.js";
import { BENIGN_SVGS, HOSTILE_SVGS } from "./support/hostile-svgs.js";
import { expectJson } from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// Issue 24, findings 6 and 7, in a real Chromium against a real stack. Two host names
// mapped to 127.0.0.1 by Chromium's resolver give two origins that are not loopback
// origins by name (local mode lets loopback pages frame the checkout): shop.test,
// which the partner declares, and evil.test, which it does not. One small HTTP server
// answers both: `/frame?target=URL` is a page that frames URL; everything else is
// counted as a request that should never have come.

let stack: TestStack;
let store: Store;
let browser: Chromium;
let server: Server;
let artifacts: string;
let shopOrigin: string;
let evilOrigin: string;
const strayRequests: string[] = [];

beforeAll(async () => {
  artifacts = freshArtifacts("hosted-framing-logos");
  server = createServer((request: IncomingMessage, response) => {
    const url = new URL(request.url ?? "/", "http://placeholder");
    if (url.pathname === "/frame") {
      response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      const target = (url.searchParams.get("target") ?? "").replaceAll('"', "&quot;");
      response.end(
        `<!doctype html><html lang="en"><head><title>Partner page</title></head><body><h1>A page on ${request.headers.host}</h1>` +
          `<iframe id="checkout" title="Checkout" src="${target}" width="900" height="600"></iframe></body></html>`,
      );
      return;
    }
    if (url.pathname === "/favicon.ico") {
      response.writeHead(204).end();
      return;
    }
    strayRequests.push(`${request.headers.host}${request.url}`);
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  shopOrigin = `http://shop.test:${port}`;
  evilOrigin = `http://evil.test:${port}`;
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  browser = await launchChromium("hosted-framing", { width: 1280, height: 800 }, [
    "--host-resolver-rules=MAP shop.test 127.0.0.1, MAP evil.test 127.0.0.1",
  ]);
});
afterAll(async () => {
  await browser?.close();
  await store?.destroy();
  await stack?.stop();
  await closeServer(server);
});

const frameAncestors = (response: Response) =>
  /frame-ancestors ([^;]+)/.exec(response.headers.get("content-security-policy") ?? "")?.[1];
const checkoutPage = (sessionId: string, parentOrigin?: string) =>
  fetch(
    `${stack.ponder.baseUrl}/checkout/${sessionId}${parentOrigin === undefined ? "" : `?parentOrigin=${encodeURIComponent(parentOrigin)}`}`,
  );

/** Opens `framingOrigin`'s page framing the checkout, and answers whether the checkout rendered inside it. */
async function framedFrom(page: Page, framingOrigin: string, sessionId: string, parentOrigin: string, shot: string) {
  const target = `${stack.ponder.baseUrl}/checkout/${sessionId}?parentOrigin=${encodeURIComponent(parentOrigin)}`;
  const refusals: string[] = [];
  page.on("console", (message) => {
    if (/frame-ancestors|Refused to (display|frame)/i.test(message.text())) refusals.push(message.text());
  });
  const checkoutResponse = page.waitForResponse((response) => response.url().startsWith(`${stack.ponder.baseUrl}/checkout/`));
  await page.goto(`${framingOrigin}/frame?target=${encodeURIComponent(target)}`);
  await checkoutResponse;
  const frame = await (await page.waitForSelector("iframe#checkout")).contentFrame();
  if (frame === null) throw new Error("no frame");
  await frame.waitForLoadState("load").catch(() => undefined);
  // The checkout page's own script writes its status line; a refused frame has no document of ours.
  const rendered = await frame
    .waitForSelector("#checkout-title", { timeout: 3_000 })
    .then(() => true)
    .catch(() => false);
  await page.screenshot({ path: join(artifacts, `${shot}.png`), fullPage: true });
  return { rendered, frameUrl: frame.url(), refusals };
}

describe("finding 7: who may frame the hosted checkout", () => {
  it("standalone, the checkout and the claim page answer frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const session = await createSession(stack, { shippingRequired: false });
    for (const response of [
      await checkoutPage(session.id),
      await checkoutPage(session.id, evilOrigin),
      await checkoutPage(session.id, "*"),
      await checkoutPage(session.id, `${shopOrigin}; script-src *`),
      await fetch(`${stack.ponder.baseUrl}/claim/${session.id}`),
    ]) {
      expect(response.status).toBe(200);
      expect(frameAncestors(response)).toBe("'none'");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
    }
  });

  it("declares frame origins through PATCH /v1/branding, refusing what is not an origin", async () => {
    for (const bad of ["ftp://shop.test", "https://shop.test/path", "shop.test", "*", "https://user:pw@shop.test"]) {
      const refused = await expectJson(
        await stack.partnerFetch("/v1/branding", { method: "PATCH", json: { frameOrigins: [bad] } }),
        400,
      );
      expect(refused.code, bad).toBe("invalid_request");
    }
    expect((await expectJson(await stack.partnerFetch("/v1/branding"), 200)).frameOrigins).toEqual([]);
    const branding = await expectJson(
      await stack.partnerFetch("/v1/branding", { method: "PATCH", json: { frameOrigins: [shopOrigin] } }),
      200,
    );
    expect(branding.frameOrigins).toEqual([shopOrigin]);

    const session = await createSession(stack, { shippingRequired: false });
    const declared = await checkoutPage(session.id, shopOrigin);
    expect(frameAncestors(declared)).toBe(shopOrigin);
    expect(declared.headers.get("x-frame-options")).toBeNull();
    // Local mode: a loopback page (the sample shop) may frame it undeclared.
    expect(frameAncestors(await checkoutPage(session.id, "http://localhost:5173"))).toBe("http://localhost:5173");
    expect(frameAncestors(await checkoutPage(session.id, evilOrigin))).toBe("'none'");
  });

  it("in Chromium, an undeclared origin's frame stays empty, even naming a declared origin; the declared origin's shows the checkout", {
    timeout: 60_000,
  }, async () => {
    await expectJson(await stack.partnerFetch("/v1/branding", { method: "PATCH", json: { frameOrigins: [shopOrigin] } }), 200);
    const session = await createSession(stack, { shippingRequired: false });
    const page = await browser.context.newPage();
    try {
      const evil = await framedFrom(page, evilOrigin, session.id, evilOrigin, "evil-framing-1280");
      expect(evil.rendered).toBe(false);
      expect(evil.frameUrl).not.toContain("/checkout/");
      const spoofed = await framedFrom(page, evilOrigin, session.id, shopOrigin, "evil-naming-shop-1280");
      expect(spoofed.rendered).toBe(false);
      expect(spoofed.frameUrl).not.toContain("/checkout/");
      const shop = await framedFrom(page, shopOrigin, session.id, shopOrigin, "shop-framing-1280");
      expect(shop.rendered).toBe(true);
      expect(shop.frameUrl).toContain(`/checkout/${session.id}`);
      await page.setViewportSize({ width: 390, height: 844 });
      await framedFrom(page, shopOrigin, session.id, shopOrigin, "shop-framing-390");
    } finally {
      await page.close();
    }
  });
});

describe("finding 6: hostile SVG logos", () => {
  const putLogo = (svg: string) =>
    stack.partnerFetch("/v1/branding/logo", { method: "PUT", headers: { "Content-Type": "image/svg+xml" }, body: svg });

  it("refuses each of the 14 variants with a detail naming what, and stores nothing; a benign logo is still accepted", async () => {
    const benign = await expectJson(await putLogo(BENIGN_SVGS[1]!.svg), 200);
    expect(benign.logoUrl).toMatch(/^\/branding\/ptr_demo\/logo\/[0-9a-f]{64}$/);
    for (const { name, svg } of HOSTILE_SVGS) {
      const refused = await expectJson(await putLogo(svg), 400);
      expect(refused.code, name).toBe("invalid_request");
      expect(refused.detail, name).toMatch(/^logo: .+/);
      expect(refused.errors[0].path, name).toBe("logo");
      expect((await expectJson(await stack.partnerFetch("/v1/branding"), 200)).logoUrl, name).toBe(benign.logoUrl);
    }
    const rows = await store.selectFrom("partner_branding").select("logo_sha256").where("partner_id", "=", "ptr_demo").execute();
    expect(rows.map((row) => row.logo_sha256)).toEqual([benign.logoUrl.split("/").at(-1)]);
  });

  it("in Chromium, the accepted logo renders; a hostile one forced into the store runs no script and loads nothing", {
    timeout: 60_000,
  }, async () => {
    const benign = await expectJson(await putLogo(BENIGN_SVGS[1]!.svg), 200);
    const page = await browser.context.newPage();
    // What reached a server (finished), and what the browser tried and CSP blocked (failed).
    const requested: string[] = [];
    const blocked: string[] = [];
    page.on("requestfinished", (request) => requested.push(request.url()));
    page.on("requestfailed", (request) => blocked.push(`${request.url()} ${request.failure()?.errorText}`));
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    try {
      await page.goto(`${stack.ponder.baseUrl}${benign.logoUrl}`);
      expect(await page.evaluate(() => document.documentElement.localName)).toBe("svg");
      expect(await page.evaluate(() => document.querySelectorAll("rect, circle, text").length)).toBeGreaterThan(0);
      await page.screenshot({ path: join(artifacts, "benign-logo.png") });

      // Defence in depth: were a variant ever to slip past the check, the logo's CSP
      // (default-src 'none'; sandbox) keeps it inert. Stored here behind the check's back.
      const beacon = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const hostile =
        `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10" ` +
        `onload="alert('svg');fetch('${beacon}/onload')"><script>alert('script');fetch("${beacon}/script")</script>` +
        `<image href="${beacon}/image.png" width="10" height="10"/><use xlink:href="${beacon}/sprite.svg#a"/>` +
        `<style>@import "${beacon}/import.css"; rect { fill: url(${beacon}/fill.svg#p) }</style><rect width="10" height="10"/></svg>`;
      const sha256 = "f".repeat(64);
      await store
        .updateTable("partner_branding")
        .set({ logo_content_type: "image/svg+xml", logo_base64: Buffer.from(hostile).toString("base64"), logo_sha256: sha256 })
        .where("partner_id", "=", "ptr_demo")
        .execute();
      requested.length = 0;
      strayRequests.length = 0;
      const served = await page.goto(`${stack.ponder.baseUrl}/branding/ptr_demo/logo/${sha256}`);
      expect(served?.headers()["content-security-policy"]).toContain("sandbox");
      await page.waitForLoadState("load");
      // Give a script every chance to run: wait until the page settled (no request in flight).
      await page.waitForLoadState("networkidle");
      await page.screenshot({ path: join(artifacts, "hostile-logo-forced.png") });
      expect(dialogs).toEqual([]);
      expect(
        requested.filter((url) => !url.startsWith(stack.ponder.baseUrl)),
        `blocked: ${blocked.join(", ")}`,
      ).toEqual([]);
      expect(strayRequests).toEqual([]);
    } finally {
      await page.close();
      await store
        .updateTable("partner_branding")
        .set({ logo_sha256: null, logo_base64: null, logo_content_type: null })
        .where("partner_id", "=", "ptr_demo")
        .execute();
    }
  });
});
