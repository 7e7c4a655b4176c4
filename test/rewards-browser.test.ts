import { join } from "node:path";
import type { Page, Request } from "playwright-core";
import { type Address, erc20Abi, getAddress, type Hex, keccak256, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeFindings, type Chromium, freshArtifacts, launchChromium, requireChromium } from "./support/browser.js";
import { type CreatedSession, createSession, submitHash } from "./support/checkout-helpers.js";
import { putProvenFundingAddress } from "./support/reward-funding.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// "Claim your reward" on the hosted claim page and confirmation page, in Chromium at
// 1280 and 390 px: screenshots in test-artifacts/rewards/ (not committed), axe-core
// clean, and no request leaves the service's origin.

const ARTIFACTS = freshArtifacts("rewards");
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const FUNDER = 5;

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

async function settledSession(): Promise<CreatedSession & { url?: string }> {
  const session = (await createSession(stack, {
    totalPriceUsdc: "20000000",
    certificate: { enabled: false },
  })) as CreatedSession & {
    url?: string;
  };
  const paid = await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
  await waitFor(async () => {
    const body = (await (await submitHash(stack, session.clientToken, paid.hash)).json()) as Json;
    return body.status === "settled" ? body : undefined;
  });
  return session;
}

/** Opens the claim page as the shop's form does: the client token in a POST body from the service's own origin. */
async function openClaimPage(page: Page, session: CreatedSession) {
  await page.goto(`${stack.ponder.baseUrl}/claim/${session.id}`);
  await page.evaluate(
    ({ action, clientToken }) => {
      const form = document.createElement("form");
      form.method = "POST";
      form.action = action;
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = "clientToken";
      input.value = clientToken;
      form.append(input);
      document.body.append(form);
      form.submit();
    },
    { action: `/claim/${session.id}`, clientToken: session.clientToken },
  );
  await page.locator("#rewards-step").waitFor();
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

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  const funder = getAddress(stack.local.accounts[FUNDER]!.address);
  const proven = await putProvenFundingAddress(stack, {
    address: funder,
    sign: (message) => privateKeyToAccount(stack.local.accounts[FUNDER]!.privateKey as Hex).signMessage({ message }),
  });
  expect(proven.status).toBe(200);
  const wallet = stack.wallet(FUNDER);
  const hash = await wallet.writeContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "approve",
    args: [stack.local.contracts.rewardDistributor as Address, 1_000_000_000n],
    chain: stack.chain,
    account: wallet.account!,
  });
  await stack.publicClient.waitForTransactionReceipt({ hash });
  await partner("/v1/rewards/settings", { method: "PUT", json: {} });
  chromium = await launchChromium("rewards", WIDE);
  chromium.context.on("request", (request) => requests.push(request));
}, 420_000);

afterAll(async () => {
  const foreign = requests.map((request) => new URL(request.url())).filter((url) => url.origin !== stack.ponder.baseUrl);
  expect(foreign.map(String)).toEqual([]);
  await chromium?.close();
  await stack?.stop();
});

describe("Claim your reward (hosted pages, Chromium)", () => {
  it("the claim page shows each reward's state plainly and claims one without ETH for a typed address", async () => {
    const session = await settledSession();
    const ready = await partner(`/v1/orders/${session.orderId}/rewards`, {
      method: "POST",
      json: { amount: "1250000", idempotencyKey: "browser-ready" },
    });
    const withdrawn = await partner(`/v1/orders/${session.orderId}/rewards`, {
      method: "POST",
      json: { amount: "500000", idempotencyKey: "browser-withdrawn" },
    });
    await partner(`/v1/rewards/${withdrawn.id}/revoke`, { method: "POST", json: { reason: "test" } });

    const page = await chromium!.context.newPage();
    await openClaimPage(page, session);
    await expect.poll(() => page.locator("#claim-title").textContent()).toBe("Claim your reward");
    const items = page.locator("#rewards-list li");
    await expect.poll(() => items.count()).toBe(2);
    const readyItem = page.locator(`#rewards-list li[data-status="granted"]`);
    expect(await readyItem.locator(".reward-amount").textContent()).toBe("1.25 USDC cashback");
    expect(await readyItem.locator(".status").textContent()).toMatch(/^Ready to claim until /);
    expect(await page.locator(`#rewards-list li[data-status="revoked"] .status`).textContent()).toBe(
      "The shop withdrew this reward.",
    );
    // No wallet in this browser: the address is typed, and only the relayed claim is offered.
    expect(await page.locator("#reward-address-field").isVisible()).toBe(true);
    expect(await readyItem.getByRole("button", { name: "Claim with my wallet" }).count()).toBe(0);
    await shoot(page, "01-claim-page-ready");

    await readyItem.getByRole("button", { name: "Claim without ETH" }).click();
    await expect.poll(() => page.locator("#reward-error").textContent()).toMatch(/Enter the address of your wallet/);
    expect(await page.locator("#reward-address").getAttribute("aria-invalid")).toBe("true");

    const recipient = privateKeyToAccount(keccak256(toHex(`browser-recipient-${Date.now()}`))).address;
    await page.locator("#reward-address").fill(recipient);
    await readyItem.getByRole("button", { name: "Claim without ETH" }).click();
    const paid = page.locator(`#rewards-list li[data-status="claimed"] .status`);
    await paid.waitFor({ timeout: 30_000 });
    expect(await paid.textContent()).toBe(`Paid to ${recipient}.`);
    expect(
      await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [recipient],
      }),
    ).toBe(1_250_000n);
    expect((await partner(`/v1/rewards/${ready.id}`)).status).toBe("claimed");
    await shoot(page, "02-claim-page-claimed");
    await page.close();
  });

  it("the confirmation page offers the automatic cashback and keeps the customer there", async () => {
    await partner("/v1/rewards/settings", { method: "PUT", json: { cashbackBps: 500 } });
    const session = await settledSession();
    const url = session.url as string;
    expect(url).toContain("#ct=");
    const page = await chromium!.context.newPage();
    await page.goto(url);
    await page.locator("#done-step").waitFor();
    await page.locator("#rewards-step").waitFor();
    const item = page.locator(`#rewards-list li[data-status="granted"]`);
    expect(await item.locator(".reward-amount").textContent()).toMatch(/^1\.\d+ USDC cashback$/);
    expect(await item.getByRole("button", { name: "Claim without ETH" }).isVisible()).toBe(true);
    await shoot(page, "03-confirmation-page");
    await partner("/v1/rewards/settings", { method: "PUT", json: { cashbackBps: 0 } });
    await page.close();
  });
});
