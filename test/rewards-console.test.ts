import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { type Address, createWalletClient, erc20Abi, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import { createSession, submitHash } from "./support/checkout-helpers.js";
import { putProvenFundingAddress } from "./support/reward-funding.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The console's Rewards screen (partner) and unknown reward claims (admin) in headless
// Chromium at 1280 and 390 px: screenshots in test-artifacts/rewards-console/ (not
// committed), axe-core clean, every request to the service's origin. The funding
// wallet is a partner admin member; it approves the distributor from the screen.

const ARTIFACTS = freshArtifacts("rewards-console");
const FUNDER = 5;

let stack: TestStack;
let context: BrowserContext;
let chromium: Chromium | undefined;
let walletKey: Hex;
const requestedUrls: string[] = [];

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
type Json = Record<string, any>;

async function partner(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Json> {
  const response = await stack.partnerFetch(path, init);
  const body = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

async function capture(page: Page, name: string) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
    const blocking = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${width}.json`), { blockingOnly: true });
    expect(blocking, `${name} at ${width} px: accessibility violations`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function signIn(page: Page, portal: "Partner" | "Administrator", key: Hex) {
  walletKey = key;
  await page.goto(`${stack.local.baseUrl}/console`);
  await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
  await page.getByRole("radio", { name: new RegExp(`^${portal}`) }).check();
  await page.getByRole("button", { name: "Sign in with wallet" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  chromium = await launchChromium("rewards-console", { width: 1280, height: 900 });
  context = chromium.context;
  context.on("request", (request) => requestedUrls.push(request.url()));
  await injectTestWallet(context, { chain: stack.chain, rpcUrl: stack.local.rpcUrl, key: () => walletKey });
}, 420_000);

afterAll(async () => {
  const foreign = requestedUrls.filter((url) => new URL(url).origin !== stack.local.baseUrl);
  expect(foreign).toEqual([]);
  await chromium?.close();
  await stack?.stop();
});

describe("the console's rewards screens (Chromium)", () => {
  it("signed in with the partner test account (local mode, no wallet), funds rewards with the test account", {
    timeout: 240_000,
  }, async () => {
    const page = await context.newPage();
    await page.goto(`${stack.local.baseUrl}/console`);
    await page.getByRole("button", { name: "Sign in with a test account: Partner" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await page.getByRole("navigation").getByRole("link", { name: "Rewards" }).click();
    await page.getByRole("heading", { name: "Rewards", level: 1 }).waitFor();
    expect((await partner("/v1/rewards/settings")).fundingAddress).toBeNull();
    await page.getByLabel("Allowance to approve (USDC)").fill("40");
    await page.getByRole("button", { name: "Approve with the test account" }).click();
    await page.getByRole("status").filter({ hasText: "Approved from" }).waitFor({ timeout: 60_000 });
    await expect.poll(() => page.getByTestId("reward-allowance").textContent(), { timeout: 30_000 }).toBe("40.00 USDC");
    // The service proved the address as any wallet does, then approved from it on the chain.
    const funder = stack.local.accounts[FUNDER]!.address as Address;
    expect(await page.getByLabel("Funding address").inputValue()).toBe(funder);
    expect(await partner("/v1/rewards/settings")).toMatchObject({
      fundingAddress: funder,
      fundingProven: true,
      allowance: "40000000",
    });
    expect(
      await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "allowance",
        args: [funder, stack.local.contracts.rewardDistributor as Address],
      }),
    ).toBe(40_000_000n);
    // No reward was granted or claimed on the way (`simulate reward` did both).
    expect((await partner("/v1/rewards")).data).toEqual([]);
    await capture(page, "00-partner-rewards-test-account-funding");
    await page.close();
    // The next test starts from an allowance short of its rewards: take this one back.
    const wallet = createWalletClient({
      account: privateKeyToAccount(stack.local.accounts[FUNDER]!.privateKey as Hex),
      chain: stack.chain,
      transport: http(stack.local.rpcUrl),
    });
    await stack.publicClient.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "approve",
        args: [stack.local.contracts.rewardDistributor as Address, 0n],
        chain: stack.chain,
      }),
    });
  });

  it("a partner admin sees the shortfall, approves the distributor from the funding wallet, grants and revokes", {
    timeout: 240_000,
  }, async () => {
    const funderKey = stack.local.accounts[FUNDER]!.privateKey as Hex;
    const funder = privateKeyToAccount(funderKey).address;
    await partner("/v1/members", { method: "POST", json: { address: funder, role: "admin" } });
    const proven = await putProvenFundingAddress(stack, {
      address: funder,
      sign: (message) => privateKeyToAccount(funderKey).signMessage({ message }),
      cashbackBps: 0,
    });
    expect(proven.status).toBe(200);
    const session = await createSession(stack, { totalPriceUsdc: "10000000", certificate: { enabled: false } });
    const paid = await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await waitFor(async () => {
      const body = (await (await submitHash(stack, session.clientToken, paid.hash)).json()) as Json;
      return body.status === "settled" ? body : undefined;
    });
    await partner(`/v1/orders/${session.orderId}/rewards`, {
      method: "POST",
      json: { amount: "2000000", idempotencyKey: "console-first" },
    });

    const page = await context.newPage();
    await signIn(page, "Partner", funderKey);
    await page.getByRole("navigation").getByRole("link", { name: "Rewards" }).click();
    await page.getByRole("heading", { name: "Rewards", level: 1 }).waitFor();
    await page.getByRole("alert").filter({ hasText: "allowance is below your outstanding rewards" }).waitFor();
    expect(await page.getByTestId("reward-outstanding").textContent()).toBe("2.00 USDC");
    expect(await page.getByTestId("reward-allowance").textContent()).toBe("0.00 USDC");
    await capture(page, "01-partner-rewards-short");

    await page.getByLabel("Allowance to approve (USDC)").fill("50");
    await page.getByRole("button", { name: "Approve the distributor" }).click();
    await page.getByRole("status").filter({ hasText: "Approved." }).waitFor({ timeout: 30_000 });
    await expect.poll(() => page.getByTestId("reward-allowance").textContent(), { timeout: 60_000 }).toBe("50.00 USDC");
    expect(
      await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "allowance",
        args: [funder, stack.local.contracts.rewardDistributor as Address],
      }),
    ).toBe(50_000_000n);
    expect(await page.getByRole("alert").filter({ hasText: "allowance is below" }).count()).toBe(0);

    await page.getByLabel("Order id").fill(session.orderId);
    await page.getByLabel("Amount (USDC)").fill("1.5");
    await page.getByRole("button", { name: "Grant reward" }).click();
    await page.getByRole("status").filter({ hasText: "Granted 1.50 USDC" }).waitFor();
    await expect.poll(() => page.getByTestId("reward-outstanding").textContent()).toBe("3.50 USDC");
    const rows = page.getByRole("row").filter({ hasText: session.externalOrderId });
    await expect.poll(() => rows.count()).toBe(2);
    await capture(page, "02-partner-rewards-granted");

    await rows
      .first()
      .getByRole("button", { name: /^Revoke/ })
      .click();
    await expect.poll(() => page.locator(".status-revoked").count()).toBe(1);
    await expect.poll(() => page.getByTestId("reward-outstanding").textContent()).not.toBe("3.50 USDC");
    await capture(page, "03-partner-rewards-revoked");
    await page.close();
  });

  it("an administrator lists unknown reward claims", async () => {
    const page = await context.newPage();
    await signIn(page, "Administrator", stack.local.admin.privateKey as Hex);
    await page.getByRole("navigation").getByRole("link", { name: "Unknown reward claims" }).click();
    await page.getByRole("heading", { name: "Unknown reward claims", level: 1 }).waitFor();
    await page.getByRole("cell", { name: "None." }).waitFor();
    await capture(page, "04-admin-unknown-claims");
    await page.close();
  });
});
