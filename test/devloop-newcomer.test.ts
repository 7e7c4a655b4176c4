import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_ACCOUNT_INDEX, testAccountAddress } from "../api/sign-in/test-accounts.js";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { createAppWithoutChain } from "../scripts/openapi-document.js";
import { axeFindings, type Chromium, freshArtifacts, launchChromium } from "./support/browser.js";
import { createSession } from "./support/checkout-helpers.js";
import { api, expectJson } from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// What stopped a newcomer after the first payment (issue 29): the README's component
// snippet as written, the console without a browser wallet (a test account per role,
// local mode only), and `events:listen -- --help`. One stack, one Chromium.

const ARTIFACTS = freshArtifacts("devloop-newcomer");
let stack: TestStack;
let chromium: Chromium;
let shop: Server;
let shopPage = "";
const base = () => stack.ponder.baseUrl;

beforeAll(async () => {
  // What a newcomer's `npm start` runs: the embedded index.
  stack = await startTestStack({ index: "embedded" });
  chromium = await launchChromium("devloop-newcomer");
  shop = createServer((_request, response) => {
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    response.end(shopPage);
  });
  await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  await chromium?.close();
  shop?.close();
  await stack?.stop();
});

/** The README's component snippet, exactly as written there (the fenced html block). */
function readmeSnippet(): string {
  const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
  const block = /```html\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error("README.md has no html snippet");
  return block
    .split("\n")
    .map((line) => line.trim())
    .join("\n");
}

describe("the README's <usdc-checkout session-id client-token> snippet", () => {
  it("renders the hosted checkout in a frame, in Chromium, from a shop on another origin", async () => {
    const session = await createSession(stack, { shippingRequired: false });
    const snippet = readmeSnippet();
    expect(snippet).toContain('client-token="ct_…"');
    const html = snippet
      .replace("http://127.0.0.1:42069", base())
      .replace('session-id="cs_…"', `session-id="${session.id}"`)
      .replace('client-token="ct_…"', `client-token="${session.clientToken}"`);
    shopPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main><h1>Checkout</h1>\n${html}\n</main></body></html>`;
    const page = await chromium.context.newPage();
    try {
      await page.goto(`http://127.0.0.1:${(shop.address() as AddressInfo).port}/cart`);
      const frame = await waitForFrame(page, `/checkout/${session.id}`);
      await frame.locator("#checkout:not([data-state='loading'])").waitFor({ timeout: 30_000 });
      expect(["awaiting_details", "awaiting_payment"]).toContain(await frame.locator("#checkout").getAttribute("data-state"));
      // The token was read and taken off the element: it does not stay in the DOM.
      expect(await page.locator("usdc-checkout").getAttribute("client-token")).toBeNull();
      expect(await page.content()).not.toContain(session.clientToken);
      await page.screenshot({ path: join(ARTIFACTS, "readme-snippet-1280.png") });
    } finally {
      await page.close();
    }
  });

  it("renders as well from properties set by script", async () => {
    const session = await createSession(stack, { shippingRequired: false });
    shopPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main>
<script src="${base()}/assets/checkout-component.js"></script>
<usdc-checkout id="pay"></usdc-checkout>
<script>const el = document.getElementById("pay"); el.sessionId = ${JSON.stringify(session.id)}; el.clientToken = ${JSON.stringify(session.clientToken)};</script>
</main></body></html>`;
    const page = await chromium.context.newPage();
    try {
      await page.goto(`http://127.0.0.1:${(shop.address() as AddressInfo).port}/props`);
      const frame = await waitForFrame(page, `/checkout/${session.id}`);
      await frame.locator("#checkout:not([data-state='loading'])").waitFor({ timeout: 30_000 });
      expect(["awaiting_details", "awaiting_payment"]).toContain(await frame.locator("#checkout").getAttribute("data-state"));
      expect(await page.locator("usdc-checkout").getAttribute("session-id")).toBe(session.id);
    } finally {
      await page.close();
    }
  });
});

async function waitForFrame(page: Page, path: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const frame = page.frames().find((candidate) => candidate.url().includes(path));
    if (frame !== undefined) return frame;
    if (Date.now() > deadline) throw new Error(`no frame of ${path}`);
    await page.waitForTimeout(100);
  }
}

describe("local mode: sign in to the console with a test account", () => {
  const roles = [
    { role: "investor", name: "Investor", screen: /Investor/ },
    { role: "partner", name: "Partner", screen: /Partner/ },
    { role: "issuer", name: "Issuer", screen: /Issuer/ },
    { role: "admin", name: "Administrator", screen: /Administrator/ },
  ] as const;

  it("lists one seeded test account per role, and signs each in through the portal's own rules", async () => {
    const listed = await expectJson(await api(stack, "GET", "/api/local/test-accounts"), 200);
    expect(listed.data.map((row: { role: string }) => row.role).sort()).toEqual(["admin", "investor", "issuer", "partner"]);
    for (const { role } of roles) {
      const session = await expectJson(await api(stack, "POST", `/api/${role}/auth/test-account`), 200);
      expect(session).toMatchObject({ role, address: testAccountAddress(role) });
      // The session is a real one of that portal.
      const current = await expectJson(await api(stack, "GET", `/api/${role}/auth/session`, { token: session.token }), 200);
      expect(current.role).toBe(role);
    }
    // The demo partner has its member; the seeded investor is approved.
    const partnerToken = (await expectJson(await api(stack, "POST", "/api/partner/auth/test-account"), 200)).token;
    const profile = await expectJson(await api(stack, "GET", "/api/partner/profile", { token: partnerToken }), 200);
    expect(profile.id).toBe(stack.local.partner.id);
    expect(TEST_ACCOUNT_INDEX.admin).toBeGreaterThanOrEqual(10);
    // An unknown role is refused before anything is signed.
    expect((await api(stack, "POST", "/api/operator/auth/test-account")).status).toBe(400);
  });

  it("offers 'Sign in with a test account' for each role in Chromium (screenshots at 1280 and 390 px, axe-core)", async () => {
    const origin = new URL(base()).origin;
    for (const { role, name } of roles) {
      const page = await chromium.context.newPage();
      const outside: string[] = [];
      page.on("request", (request) => {
        if (!request.url().startsWith(origin) && !request.url().startsWith("data:")) outside.push(request.url());
      });
      try {
        await page.setViewportSize({ width: 1280, height: 900 });
        await page.goto(`${base()}/console`);
        await page.getByRole("heading", { name: "Sign in to the console" }).waitFor({ timeout: 30_000 });
        const button = page.getByRole("button", { name: `Sign in with a test account: ${name}` });
        await button.waitFor({ timeout: 30_000 });
        if (role === "investor") {
          for (const width of [1280, 390]) {
            await page.setViewportSize({ width, height: 900 });
            await page.screenshot({ path: join(ARTIFACTS, `sign-in-${width}.png`), fullPage: true });
            expect(await axeFindings(page, join(ARTIFACTS, `axe-sign-in-${width}.json`), { blockingOnly: true })).toEqual([]);
          }
          await page.setViewportSize({ width: 1280, height: 900 });
        }
        await button.click();
        await page.getByRole("button", { name: "Sign out" }).waitFor({ timeout: 30_000 });
        await page.getByRole("navigation", { name: `${name} screens` }).waitFor();
        for (const width of [1280, 390]) {
          await page.setViewportSize({ width, height: 900 });
          await page.screenshot({ path: join(ARTIFACTS, `${role}-signed-in-${width}.png`), fullPage: true });
          const serious = await axeFindings(page, join(ARTIFACTS, `axe-${role}-${width}.json`), { blockingOnly: true });
          expect(serious, `${role} at ${width}`).toEqual([]);
        }
        expect(outside).toEqual([]);
      } finally {
        await page.close();
      }
    }
  });

  it("is absent outside local mode: the routes answer 404 and nothing is signed", async () => {
    const keyFile = join(stack.dataDir, "absent-test-secrets.key");
    writeFileSync(keyFile, `${"ab".repeat(32)}\n`, { mode: 0o600 });
    const app = await createAppWithoutChain({
      LOCAL_MODE: "false",
      PUBLIC_BASE_URL: "https://pay.example.com",
      SECRETS_KEY_FILE: keyFile,
    });
    try {
      const list = await app.app.request("/api/local/test-accounts");
      expect(list.status).toBe(404);
      for (const role of ["investor", "partner", "issuer", "admin"]) {
        const refused = await app.app.request(`/api/${role}/auth/test-account`, { method: "POST" });
        expect(refused.status).toBe(404);
        expect(((await refused.json()) as { code: string }).code).toBe("not_found");
      }
      const document = (await (await app.app.request("/openapi.json")).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(document.paths).filter((path) => path.includes("test-account"))).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe("npm run events:listen", () => {
  it("--help prints every option and exits 0; the signing secret is kept in DATA_DIR across starts", async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [join(PROJECT_ROOT, "node_modules", "tsx", "dist", "cli.mjs"), "scripts/events-listen.ts", ...args],
          {
            cwd: PROJECT_ROOT,
            env: { ...process.env, DATA_DIR: stack.dataDir, LISTEN_SECRET: "" },
            stdio: ["ignore", "pipe", "pipe"],
          },
        );
        let out = "";
        child.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.stderr?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.once("exit", (code) => resolve({ code, out }));
      });
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    for (const option of ["--forward-to", "--from-start", "--interval", "--print-secret", "--new-secret", "--help"])
      expect(help.out).toContain(option);
    const first = await run(["--print-secret"]);
    const second = await run(["--print-secret"]);
    expect(first.out.trim()).toMatch(/^whsec_[0-9a-f]{48}$/);
    expect(second.out.trim()).toBe(first.out.trim());
    expect(readFileSync(join(stack.dataDir, "events-listen-secret"), "utf8").trim()).toBe(first.out.trim());
    const unknown = await run(["--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.out).toContain("usage: npm run events:listen");
  });
});
