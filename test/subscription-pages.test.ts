import { join } from "node:path";
import type { BrowserContext, Page, Request } from "playwright-core";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import { outboxEvents } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The subscription pages (issue 44, SPEC 18) in Chromium at 1280 and 390 px: the hosted subscribe
// page (`/subscribe/<id>#st=`) and the customer's page (`/subscription/<id>#st=`), and the console's
// Subscriptions screen. Screenshots and axe-core reports in test-artifacts/subscription-pages/ (not
// committed). The customer's wallet is a real key behind an injected `window.ethereum` holding USDC
// and no ETH: it subscribes and cancels with signatures only, the relayer sends, and each page
// shows a state only once the index holds it.

const ARTIFACTS = freshArtifacts("subscription-pages");
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const SUBSCRIBER = 4;
const MEMBER = 6;
const AMOUNT = 3_000_000n;

let stack: TestStack;
let store: Store;
let chromium: Chromium | undefined;
let context: BrowserContext;
let walletKey: Hex;
const requests: Request[] = [];

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
type Json = Record<string, any>;

const keyOf = (index: number) => stack.local.accounts[index]?.privateKey as Hex;

async function partner(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Json> {
  const response = await stack.partnerFetch(path, init);
  const body = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

let keyCounter = 0;
const createSubscription = (productName = "Monthly plan") =>
  partner("/v1/subscriptions", {
    method: "POST",
    json: {
      externalCustomerId: `cus_${keyCounter}`,
      productName,
      amount: AMOUNT.toString(),
      interval: "month",
      cancelUrl: `${stack.ponder.baseUrl}/shop`,
      idempotencyKey: `pages-${Date.now()}-${keyCounter++}`,
    },
  });

/** The link the shop sends, on the stack's own origin. */
const onStack = (link: string) => {
  const url = new URL(link);
  return `${stack.ponder.baseUrl}${url.pathname}${url.hash}`;
};

const subscriptionIn = (id: string, check: (subscription: Json) => boolean, what: string) =>
  waitFor(
    async () => {
      const subscription = await partner(`/v1/subscriptions/${id}`);
      return check(subscription) ? subscription : undefined;
    },
    { what, timeoutMs: 60_000 },
  );

async function shoot(page: Page, name: string, options: { blockingOnly?: boolean } = {}) {
  for (const [label, viewport] of [
    ["1280", WIDE],
    ["390", PHONE],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined))));
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${label}.png`), fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, `${name} at ${label} px overflows sideways`).toBeLessThanOrEqual(0);
    const violations = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${label}.json`), {
      blockingOnly: options.blockingOnly ?? false,
    });
    expect(violations, `${name} at ${label} px: accessibility violations`).toEqual([]);
  }
  await page.setViewportSize(WIDE);
}

const publicPost = (path: string, body: unknown) =>
  fetch(`${stack.ponder.baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });

async function expectProblem(response: Response, status: number, code: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect((JSON.parse(text) as Json).code).toBe(code);
}

/** Waits for the page's state, and says where things stood when it never comes. */
async function stateOf(page: Page, root: string, state: string, timeout = 60_000) {
  try {
    await page.locator(`#${root}[data-state="${state}"]`).waitFor({ timeout });
  } catch (error) {
    const shown = await page.locator("#status").textContent();
    throw new Error(`the page never showed ${state}; it says "${shown}"`, { cause: error });
  }
}

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  const subscriber = privateKeyToAccount(keyOf(SUBSCRIBER));
  await stack.payUsdc({ from: 0, to: subscriber.address, amount: 20n * AMOUNT });
  // Signatures only: the customer's wallet holds no ETH at all.
  await stack.testClient.setBalance({ address: subscriber.address, value: 0n });
  await partner("/v1/members", { method: "POST", json: { address: privateKeyToAccount(keyOf(MEMBER)).address, role: "member" } });
  walletKey = keyOf(SUBSCRIBER);
  chromium = await launchChromium("subscription-pages", WIDE);
  context = chromium.context;
  context.on("request", (request) => requests.push(request));
  await injectTestWallet(context, { chain: stack.chain, rpcUrl: stack.local.rpcUrl, key: () => walletKey });
}, 420_000);

afterAll(async () => {
  const foreign = requests.map((request) => new URL(request.url())).filter((url) => url.origin !== stack.ponder.baseUrl);
  expect(foreign.map(String)).toEqual([]);
  await chromium?.close();
  await store?.destroy();
  await stack?.stop();
});

describe("the subscription pages (Chromium)", () => {
  let subscription: Json;

  it("are served with the hosted pages' policy, and an id that cannot be one is 404", async () => {
    for (const path of ["/subscribe/sub_x", "/subscription/sub_x"]) {
      const response = await fetch(`${stack.ponder.baseUrl}${path}`);
      expect(response.status).toBe(200);
      const csp = response.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect((await fetch(`${stack.ponder.baseUrl}${path.replace("sub_x", "a%20b")}`)).status).toBe(404);
    }
  });

  it("subscribes from a wallet with no ETH: terms in plain words, two signatures, relayed, then subscribed", async () => {
    subscription = await createSubscription();
    const page = await context.newPage();
    await page.goto(onStack(subscription.url));
    await stateOf(page, "subscribe", "awaiting_authorization");
    expect(page.url()).toBe(`${stack.ponder.baseUrl}/subscribe/${subscription.id}`);
    expect(await page.evaluate(() => location.hash)).toBe("");
    const terms = (await page.locator("#terms-step").textContent()) ?? "";
    expect(terms).toContain("3.00 USDC");
    expect(terms).toContain("every 30 days");
    expect(terms).toContain("first charge is made now");
    expect(terms).toContain("cancel at any time");
    expect(terms).toContain("Monthly plan");
    await expect(page.locator("#merchant-name").textContent()).resolves.not.toBe("");
    await shoot(page, "subscribe-terms");

    await page.getByRole("button", { name: "Connect wallet" }).click();
    // Blocks are held back so the relayed registration is seen on its way first.
    await stack.testClient.setAutomine(false);
    try {
      await page.getByRole("button", { name: "Sign and subscribe" }).click();
      await page.getByRole("heading", { name: "Registering your subscription" }).waitFor();
      await shoot(page, "subscribe-pending");
      // The link opened again meanwhile (a new tab; the same tab would only change its fragment): it waits
      // for that registration and asks for no second signature.
      const again = await context.newPage();
      await again.goto(onStack(subscription.url));
      await again.locator("#status").filter({ hasText: "waiting for the network" }).waitFor();
      await again.getByRole("heading", { name: "Registering your subscription" }).waitFor();
      expect(await again.locator("#wallet-step").isHidden()).toBe(true);
      await expect(again.locator("#pending-hash").textContent()).resolves.toMatch(/^0x[0-9a-f]{64}$/);
      await again.close();
    } finally {
      await stack.testClient.setAutomine(true);
    }
    await stack.testClient.mine({ blocks: 1 });
    await stateOf(page, "subscribe", "active");
    await page.getByRole("heading", { name: "You are subscribed" }).waitFor();
    await shoot(page, "subscribe-done");
    const active = await partner(`/v1/subscriptions/${subscription.id}`);
    expect(active.subscriber.toLowerCase()).toBe(privateKeyToAccount(keyOf(SUBSCRIBER)).address.toLowerCase());
    expect(await stack.publicClient.getBalance({ address: active.subscriber })).toBe(0n);
    await page.close();
  }, 180_000);

  it("shows the customer the next charge and past charges with their transactions, and cancels with a signature", async () => {
    const paid = await subscriptionIn(
      subscription.id,
      (read) => read.charges.some((charge: Json) => charge.status === "paid"),
      "the first charge paid",
    );
    const charge = paid.charges.find((c: Json) => c.status === "paid");
    const page = await context.newPage();
    await page.goto(onStack(subscription.customerUrl));
    await stateOf(page, "subscription", "active");
    expect(page.url()).toBe(`${stack.ponder.baseUrl}/subscription/${subscription.id}`);
    expect(await page.evaluate(() => location.hash)).toBe("");
    await expect(page.locator("#charges-list").textContent()).resolves.toContain(charge.transactionHash);
    await expect(page.locator("#charges-list").textContent()).resolves.toContain("Paid");
    await expect(page.locator("#detail-next").textContent()).resolves.toMatch(/UTC$/);
    await shoot(page, "customer-active");

    // Refused, and nothing sent: a cancel signed by another wallet, or with a wrong token.
    const read = await publicPost(`/v1/public/subscriptions/${subscription.id}/validate`, {
      clientToken: subscription.clientToken,
    });
    const view = (await read.json()) as Json;
    expect(view).not.toHaveProperty("externalCustomerId");
    expect(view).not.toHaveProperty("metadata");
    const { EIP712Domain: _domainType, ...types } = view.cancel.typedData.types;
    const stranger = await privateKeyToAccount(keyOf(MEMBER)).signTypedData({
      ...view.cancel.typedData,
      domain: { ...view.cancel.typedData.domain, chainId: Number(view.cancel.typedData.domain.chainId) },
      types,
    });
    await expectProblem(
      await publicPost(`/v1/public/subscriptions/${subscription.id}/cancel`, {
        clientToken: subscription.clientToken,
        signature: stranger,
      }),
      422,
      "subscription_cancel_bad_signature",
    );
    await expectProblem(
      await publicPost(`/v1/public/subscriptions/${subscription.id}/cancel`, { clientToken: "st_wrong", signature: stranger }),
      401,
      "invalid_subscription_token",
    );
    expect((await partner(`/v1/subscriptions/${subscription.id}`)).status).toBe("active");

    await page.getByRole("button", { name: "Cancel subscription" }).click();
    await stateOf(page, "subscription", "cancelled");
    await expect(page.locator("#status").textContent()).resolves.toContain("Cancelled by you");
    await shoot(page, "customer-cancelled");
    const cancelled = await partner(`/v1/subscriptions/${subscription.id}`);
    expect(cancelled).toMatchObject({ status: "cancelled", cancelledBy: "customer", nextChargeAt: null });
    const events = await outboxEvents(stack, store);
    expect(
      events.some(
        (event) =>
          event.type === "subscription.cancelled" &&
          event.data.subscriptionId === subscription.id &&
          event.data.cancelledBy === "customer",
      ),
    ).toBe(true);
    // Nothing is left to cancel: the page no longer offers it, and the route says why.
    expect(await page.locator("#cancel-step").isHidden()).toBe(true);
    await expectProblem(
      await publicPost(`/v1/public/subscriptions/${subscription.id}/cancel`, {
        clientToken: subscription.clientToken,
        signature: stranger,
      }),
      409,
      "subscription_not_cancellable",
    );
    await page.close();
  }, 180_000);

  it("refuses a wrong token and another subscription's token on both pages, showing nothing of it", async () => {
    const other = await createSubscription("Other plan");
    const page = await context.newPage();
    const cases: [string, string][] = [
      ["wrong", "st_wrong"],
      ["other-token", other.clientToken],
    ];
    for (const [name, token] of cases) {
      for (const [path, root] of [
        ["subscribe", "terms-step"],
        ["subscription", "details-step"],
      ] as const) {
        await page.goto(`${stack.ponder.baseUrl}/${path}/${subscription.id}#st=${encodeURIComponent(token)}`);
        await page.locator('#status[data-tone="error"]').waitFor();
        await expect(page.locator("#status").textContent()).resolves.toContain("not valid");
        expect(await page.evaluate(() => location.hash)).toBe("");
        expect(await page.locator(`#${root}`).isHidden()).toBe(true);
        expect(await page.locator("main").textContent()).not.toContain("Monthly plan");
        await shoot(page, `refused-${path}-${name}`);
      }
    }
    // No token at all: the page says what link it needs.
    await page.goto(`${stack.ponder.baseUrl}/subscription/${subscription.id}`);
    await page.locator('#status[data-tone="error"]').waitFor();
    await expect(page.locator("#status").textContent()).resolves.toContain("#st=");
    await page.close();
  }, 120_000);

  it("the console's Subscriptions screen lists them, shows one's charges, and a member cancels", async () => {
    const awaiting = await createSubscription("Console plan");
    walletKey = keyOf(MEMBER);
    const page = await context.newPage();
    await page.goto(`${stack.ponder.baseUrl}/console`);
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    await page.getByRole("radio", { name: /^Partner/ }).check();
    await page.getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await page.getByRole("link", { name: "Subscriptions" }).click();
    await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
    const table = page.getByRole("table", { name: "Your subscriptions" });
    await table.getByRole("cell", { name: "Console plan" }).waitFor();
    await expect(table.textContent()).resolves.toContain("every 30 days");
    await shoot(page, "console-list", { blockingOnly: true });

    await table.getByRole("link", { name: `Subscription ${subscription.id}` }).click();
    await page.getByRole("heading", { name: "Subscription", level: 1 }).waitFor();
    const paid = await partner(`/v1/subscriptions/${subscription.id}`);
    const hash = paid.charges.find((charge: Json) => charge.status === "paid").transactionHash;
    await page.getByRole("table", { name: "Charges" }).getByText(hash).waitFor();
    await shoot(page, "console-detail-cancelled", { blockingOnly: true });

    await page.goto(`${stack.ponder.baseUrl}/console/partner/subscriptions/${awaiting.id}`);
    await page.getByRole("button", { name: "Cancel subscription" }).click();
    await page.getByRole("button", { name: "Yes, cancel it" }).click();
    await page.getByText("Cancelled by partner").waitFor();
    expect(await partner(`/v1/subscriptions/${awaiting.id}`)).toMatchObject({ status: "cancelled", cancelledBy: "partner" });
    await shoot(page, "console-detail-partner-cancelled", { blockingOnly: true });
    await page.close();
  }, 180_000);
});
