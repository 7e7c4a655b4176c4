import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Page, Request } from "playwright-core";
import { type Address, createWalletClient, erc20Abi, type Hex, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { axeFindings, type Chromium, freshArtifacts, launchChromium, requireChromium } from "./support/browser.js";
import { createSession, readSession } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The customer's refund page (`/refund/<id>#rt=<token>`, issue 26) in Chromium at 1280 and
// 390 px: screenshots in test-artifacts/refund-page/ (not committed), axe-core clean, no
// request leaves the service's origin, the token leaves the address bar, refusals say why,
// and an accepted address makes the refund `ready`; the shop's real transfer from its
// payment address (a key of the local stack) then shows as succeeded with its transaction.

const ARTIFACTS = freshArtifacts("refund-page");
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

let stack: TestStack;
let chromium: Chromium | undefined;
const requests: Request[] = [];

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
type Json = Record<string, any>;

async function partner(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Json> {
  const response = await stack.partnerFetch(path, init);
  const body = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** A settled order and a refund of part of it whose address the customer gives on the page. */
async function refundAskingTheCustomer(amount: string): Promise<Json> {
  const session = await createSession(stack, { totalPriceUsdc: "20000000", certificate: { enabled: false } });
  await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
  await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined), {
    what: `session ${session.id} settled`,
  });
  const refund = await partner("/v1/refunds", {
    method: "POST",
    json: { orderId: session.orderId, amount, reason: "requested_by_customer", idempotencyKey: `page-${randomUUID()}` },
  });
  expect(refund.status).toBe("awaiting_destination");
  return refund;
}

/** The customer's link, on the stack's own origin. */
function pageUrl(refund: Json): string {
  const url = new URL(refund.customerUrl);
  return `${stack.ponder.baseUrl}${url.pathname}${url.hash}`;
}

async function shoot(page: Page, name: string) {
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

/** Waits for the page's state; one that needs the chain (and a 4 s poll) on a loaded machine gets longer. */
async function stateOf(page: Page, state: string, timeout = 20_000) {
  try {
    await page.locator(`#refund[data-state="${state}"]`).waitFor({ timeout });
  } catch (error) {
    // Say where things stood: the page's own words and the refund as the shop reads it.
    const shown = await page.locator("#status").textContent();
    const refundId = new URL(page.url()).pathname.split("/").pop();
    const actual = await partner(`/v1/refunds/${refundId}`).catch((failure: Error) => failure.message);
    throw new Error(`the page never showed ${state}; it says "${shown}"; the refund reads ${JSON.stringify(actual)}`, {
      cause: error,
    });
  }
}

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  chromium = await launchChromium("refund-page", WIDE);
  chromium.context.on("request", (request) => requests.push(request));
}, 420_000);

afterAll(async () => {
  const foreign = requests.map((request) => new URL(request.url())).filter((url) => url.origin !== stack.ponder.baseUrl);
  expect(foreign.map(String)).toEqual([]);
  await chromium?.close();
  await stack?.stop();
});

describe("The customer's refund page (Chromium)", () => {
  it("is served with the hosted pages' policy and answers 404 for an id that cannot be one", async () => {
    const response = await fetch(`${stack.ponder.baseUrl}/refund/rf_x`);
    expect(response.status).toBe(200);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect((await fetch(`${stack.ponder.baseUrl}/refund/a%20b`)).status).toBe(404);
  });

  it("removes the token from the address bar, refuses a payment address with its reason, accepts the customer's wallet, then shows the transfer", async () => {
    const refund = await refundAskingTheCustomer("7500000");
    const page = await chromium!.context.newPage();
    await page.goto(pageUrl(refund));
    await stateOf(page, "awaiting_destination");
    expect(page.url()).toBe(`${stack.ponder.baseUrl}/refund/${refund.id}`);
    expect(await page.evaluate(() => location.hash)).toBe("");
    await expect(page.locator("#summary").textContent()).resolves.toContain("7.50 USDC");
    await expect(page.locator("#status").textContent()).resolves.toContain("Awaiting your address");
    await expect(page.locator("#exchange-warning").textContent()).resolves.toContain("exchange deposit address");
    // No injected wallet in this browser: no connect button.
    expect(await page.locator("#connect").isHidden()).toBe(true);
    await shoot(page, "awaiting-address");

    // Refusals: each says why, and the refund stays as it was.
    const refusals: [string, RegExp][] = [
      [stack.local.partner.paymentAddress, /payment address of a shop/],
      ["0x0000000000000000000000000000000000000000", /zero address/],
      [stack.local.contracts.usdc, /USDC contract itself/],
      ["0x1234", /0x followed by 40/],
    ];
    for (const [address, reason] of refusals) {
      await page.locator("#destination").fill(address);
      await page.getByRole("button", { name: "Confirm this address" }).click();
      await page.locator("#destination-error").filter({ hasText: reason }).waitFor();
    }
    expect((await partner(`/v1/refunds/${refund.id}`)).status).toBe("awaiting_destination");
    await page.locator("#destination").fill(stack.local.partner.paymentAddress);
    await page.getByRole("button", { name: "Confirm this address" }).click();
    await page
      .locator("#destination-error")
      .filter({ hasText: /payment address of a shop/ })
      .waitFor();
    await shoot(page, "refused-payment-address");

    const customer = stack.local.accounts[7]!.address;
    await page.locator("#destination").fill(customer);
    await page.getByRole("button", { name: "Confirm this address" }).click();
    await stateOf(page, "ready");
    await expect(page.locator("#status").textContent()).resolves.toContain("will send the refund");
    const ready = await partner(`/v1/refunds/${refund.id}`);
    expect(ready).toMatchObject({ status: "ready", destination: customer });
    await shoot(page, "ready");

    // The shop sends exactly the instructed transaction from its payment address.
    const key = loadOrCreateLocalSecrets(stack.dataDir).paymentPrivateKeys[0] as Hex;
    const account = privateKeyToAccount(key);
    await stack.testClient.setBalance({ address: account.address, value: parseEther("10") });
    const shop = createWalletClient({ chain: stack.chain, account, transport: http(stack.local.rpcUrl) });
    const hash = await shop.writeContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "transfer",
      args: [customer as Address, 7_500_000n],
      chain: stack.chain,
      account,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    await stack.testClient.mine({ blocks: 1 });
    // The status polls lose their connection (a restart, a dropped network): the page says
    // so and keeps asking rather than freezing; once they get through it shows the transfer.
    let connected = false;
    const validate = "**/v1/public/refunds/*/validate";
    await page.route(validate, (route) => (connected ? route.continue() : route.abort("connectionreset")));
    await page
      .locator("#status")
      .filter({ hasText: /tries again by itself/ })
      .waitFor({ timeout: 60_000 });
    await shoot(page, "retrying");
    connected = true;
    await stateOf(page, "succeeded", 60_000);
    await page.unroute(validate);
    await expect(page.locator("#detail-hash").textContent()).resolves.toBe(hash);
    await expect(page.locator("#status").textContent()).resolves.toContain("Succeeded");
    await shoot(page, "succeeded");
    await page.close();
  }, 120_000);

  it("fills the address from an injected wallet, and says plainly when the link is stolen or the refund cancelled", async () => {
    const refund = await refundAskingTheCustomer("2000000");
    const wallet = stack.local.accounts[8]!.address;
    const page = await chromium!.context.newPage();
    // A minimal EIP-1193 provider, as a wallet extension injects one.
    await page.addInitScript((address) => {
      (window as unknown as { ethereum: unknown }).ethereum = {
        request: async ({ method }: { method: string }) => (method === "eth_requestAccounts" ? [address] : null),
      };
    }, wallet);
    await page.goto(pageUrl(refund));
    await stateOf(page, "awaiting_destination");
    await page.getByRole("button", { name: "Use my connected wallet" }).click();
    // The page fills the field once the wallet answers: wait for it rather than read at once.
    await page.waitForFunction(
      (address) => (document.querySelector("#destination") as HTMLInputElement | null)?.value === address,
      wallet,
    );
    await expect(page.locator("#destination").inputValue()).resolves.toBe(wallet);
    await page.close();

    // A stolen token: nothing shown but the reason.
    const stolen = await chromium!.context.newPage();
    await stolen.goto(`${stack.ponder.baseUrl}/refund/${refund.id}#rt=rt_stolen`);
    await stolen
      .locator("#status")
      .filter({ hasText: /refund link is not valid/ })
      .waitFor();
    expect(await stolen.locator("#summary").isHidden()).toBe(true);
    await shoot(stolen, "invalid-token");
    await stolen.close();

    await partner(`/v1/refunds/${refund.id}/cancel`, { method: "POST", json: {} });
    const cancelled = await chromium!.context.newPage();
    await cancelled.goto(pageUrl(refund));
    await stateOf(cancelled, "cancelled");
    await expect(cancelled.locator("#status").textContent()).resolves.toContain("Cancelled");
    expect(await cancelled.locator("#destination-step").isHidden()).toBe(true);
    await shoot(cancelled, "cancelled");
    await cancelled.close();
  });
});
