import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { type Address, erc20Abi, isAddressEqual, parseEventLogs } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { axeFindings, type Chromium, freshArtifacts, launchChromium, requireChromium } from "./support/browser.js";
import { adminWallet, api, expectJson, openOffering, portalWallet, registerIssuer, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// The console's investor purchase screen, "Pay from a connected wallet, no ETH needed"
// (docs/gasless.md), in headless Chromium with an injected EIP-1193 wallet whose key
// stays in this process and whose address holds USDC but no ETH at all. The investor
// meets what a real one does: the wallet on another network, a signature declined in
// the wallet, a refusal from the service, a relayed payment pending, then settled.

const ARTIFACTS = freshArtifacts("console-gasless");
const OTHER_CHAIN = 8453;

let stack: TestStack;
let context: BrowserContext;
let chromium: Chromium | undefined;
const requestedUrls: string[] = [];
const investor = privateKeyToAccount(generatePrivateKey());
/** The injected wallet's state: the chain it is on, and whether the user declines the next signature. */
const wallet = { chainId: 0, declineNextSignature: false, calls: [] as string[], signed: [] as unknown[] };
/** The typed data the service served in the purchase's gasless reads. */
const served: unknown[] = [];

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  wallet.chainId = stack.chain.id;
  chromium = await launchChromium("console-gasless", { width: 1280, height: 900 });
  context = chromium.context;
  context.on("request", (request) => requestedUrls.push(request.url()));
  context.on("response", async (response) => {
    if (!/\/api\/rwa\/settlements\/authorization\/[^/]+$/.test(response.url()) || !response.ok()) return;
    const typedData = (await response.json().catch(() => ({}))).typedData;
    if (typedData) served.push(typedData);
  });
  await injectWallet(context);
}, 240_000);

afterEach(async (test) => {
  if (test.task.result?.state !== "fail") return;
  for (const [index, page] of context.pages().entries()) {
    await page.screenshot({ path: join(ARTIFACTS, `failure-${index}.png`), fullPage: true });
  }
  writeFileSync(join(ARTIFACTS, "failure-wallet-calls.json"), JSON.stringify(wallet.calls));
});

afterAll(async () => {
  await chromium?.close();
  await stack?.stop();
});

/**
 * `window.ethereum`: accounts, chain, `personal_sign` and `eth_signTypedData_v4` answered
 * here with the investor's key; the chain switch and `chainChanged` as a wallet does
 * them; errors carry their EIP-1193 code (4001: the user declined). It cannot send a
 * transaction: the investor has no ETH, and any attempt fails the test.
 */
async function injectWallet(browser: BrowserContext) {
  await browser.exposeFunction("__consoleWallet", async (method: string, params: unknown[]) => {
    wallet.calls.push(method);
    const fail = (code: number, message: string) => ({ error: { code, message } });
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return { result: [investor.address] };
      case "eth_chainId":
        return { result: `0x${wallet.chainId.toString(16)}` };
      case "wallet_switchEthereumChain": {
        const wanted = Number.parseInt((params[0] as { chainId: string }).chainId, 16);
        if (wanted !== stack.chain.id && wanted !== OTHER_CHAIN) return fail(4902, `unknown chain ${wanted}`);
        wallet.chainId = wanted;
        return { result: null, emit: ["chainChanged", `0x${wanted.toString(16)}`] };
      }
      case "personal_sign": {
        const [message, from] = params as [`0x${string}`, Address];
        if (!isAddressEqual(from, investor.address)) return fail(4100, "unknown account");
        return { result: await investor.signMessage({ message: { raw: message } }) };
      }
      case "eth_signTypedData_v4": {
        if (wallet.declineNextSignature) {
          wallet.declineNextSignature = false;
          return fail(4001, "User rejected the request.");
        }
        const [from, json] = params as [Address, string];
        if (!isAddressEqual(from, investor.address)) return fail(4100, "unknown account");
        const { domain, types, primaryType, message } = JSON.parse(json);
        wallet.signed.push(JSON.parse(json));
        // As wallets do: typed data for another chain than the wallet's is refused.
        if (Number(domain.chainId) !== wallet.chainId) return fail(-32602, "domain chainId is not the active chain");
        const { EIP712Domain: _domainType, ...messageTypes } = types;
        return { result: await investor.signTypedData({ domain, types: messageTypes, primaryType, message }) };
      }
      case "eth_sendTransaction":
      case "eth_sendRawTransaction":
        return fail(-32000, "insufficient funds for gas: this wallet holds no ETH");
      default:
        return fail(4200, `test wallet: ${method} is not supported`);
    }
  });
  await browser.addInitScript(() => {
    const target = window as unknown as Record<string, unknown>;
    const forward = target.__consoleWallet as (
      method: string,
      params: unknown[],
    ) => Promise<{ result?: unknown; error?: { code: number; message: string }; emit?: [string, unknown] }>;
    const listeners = new Map<string, Set<(value: unknown) => void>>();
    const emit = (event: string, value: unknown) => {
      for (const listener of listeners.get(event) ?? []) listener(value);
    };
    target.__walletEmit = emit;
    target.ethereum = {
      request: async ({ method, params }: { method: string; params?: unknown[] }) => {
        const answer = await forward(method, params ?? []);
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        if (answer.emit) setTimeout(() => emit(answer.emit?.[0] as string, answer.emit?.[1]), 0);
        return answer.result;
      },
      on: (event: string, listener: (value: unknown) => void) => {
        listeners.set(event, (listeners.get(event) ?? new Set()).add(listener));
      },
      removeListener: (event: string, listener: (value: unknown) => void) => {
        listeners.get(event)?.delete(listener);
      },
    };
  });
}

/** The screen at 1280 and 390 px: a screenshot of each and axe-core on each (serious and critical findings fail). */
async function capture(page: Page, name: string) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
    const blocking = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${width}.json`), { blockingOnly: true });
    expect(blocking, `${name} at ${width} px`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

const usdcOf = (address: Address) =>
  stack.publicClient.readContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });

const focusedInside = (page: Page, selector: string) =>
  page.evaluate((css) => document.activeElement?.closest(css) !== null, selector);

describe("console: an investor pays a purchase by signature, no ETH needed (headless Chromium)", () => {
  const offeringName = "Quayside Solar Note";

  it("settles the purchase from a wallet holding USDC and no ETH, through wrong network, decline and refusal", {
    timeout: 240_000,
  }, async () => {
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const issuer = await registerIssuer(stack, adminToken, portalWallet(), "Quayside Capital");
    await openOffering(stack, { issuer: issuer.token, admin: adminToken }, { name: offeringName, unitPriceUsdc: "2500000" });
    // One USDC: less than the purchase, so the service's balance check refuses the first signature.
    await stack.payUsdc({ from: 0, to: investor.address, amount: 1_000_000n });
    expect(await stack.publicClient.getBalance({ address: investor.address })).toBe(0n);

    const page = await context.newPage();
    await page.goto(`${stack.local.baseUrl}/console`);
    await page.getByRole("radio", { name: /^Investor/ }).check();
    await page.getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await page.getByRole("link", { name: offeringName }).click();
    await page.getByLabel("Units").fill("2");
    await page.getByRole("button", { name: "Reserve and continue to payment" }).click();

    // Both ways to pay: the plain transfer first (the default), the signed payment beside it.
    const gasless = page.getByRole("button", { name: "Pay from a connected wallet, no ETH needed" });
    await gasless.waitFor();
    await page.getByRole("button", { name: /^Pay 5\.\d{2,6} USDC$/ }).waitFor();
    await page.getByRole("heading", { name: "Or pay from a connected wallet, no ETH needed" }).waitFor();
    const purchaseId = page.url().split("/").pop() as string;
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("console.session") as string).token as string);
    const read = async () =>
      expectJson(await api(stack, "GET", `/api/rwa/checkout/${purchaseId}`, { token }), 200) as Promise<{
        status: string;
        payment: { amount: string; recipient: Address };
        settlement: { transactionHash: `0x${string}` } | null;
      }>;
    const purchase = await read();
    await capture(page, "01-payment-options");

    // The investor switches the wallet to another network: the screen says so and offers the switch back.
    wallet.chainId = OTHER_CHAIN;
    await page.evaluate(
      (hex) => (window as unknown as { __walletEmit: (e: string, v: unknown) => void }).__walletEmit("chainChanged", hex),
      `0x${OTHER_CHAIN.toString(16)}`,
    );
    await page.getByText("Wrong network:").waitFor();
    await capture(page, "02-wrong-network");
    // Pressing pay anyway is stopped before the wallet is asked to sign.
    await gasless.click();
    await page.getByRole("alert").filter({ hasText: "Switch your wallet to this purchase's network first" }).waitFor();
    expect(wallet.calls).not.toContain("eth_signTypedData_v4");
    await page.getByRole("button", { name: new RegExp(`^Switch wallet to .*chain ${stack.chain.id}`) }).click();
    await page.getByText("Wrong network:").waitFor({ state: "detached" });
    expect(wallet.chainId).toBe(stack.chain.id);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Send the transfer yourself");

    // The investor declines the signature in the wallet.
    wallet.declineNextSignature = true;
    await gasless.click();
    await page.getByRole("alert").filter({ hasText: "You declined the signature in your wallet" }).waitFor();
    expect(await focusedInside(page, ".gasless-failure")).toBe(true);
    await capture(page, "03-signature-declined");

    // The service refuses: the wallet holds less USDC than the amount. The code is shown, and what it means in words.
    await gasless.click();
    const refusal = page.getByRole("alert").filter({ hasText: "Your wallet holds less USDC than this purchase's amount" });
    await refusal.waitFor();
    await expect(refusal.textContent()).resolves.toContain("code: authorization_insufficient_balance");
    expect(await focusedInside(page, ".gasless-failure")).toBe(true);
    expect((await read()).status).toBe("awaiting_payment");
    await capture(page, "04-refused");

    // Topped up, the investor signs again. Blocks are held back so the relayed payment is seen pending first.
    await stack.payUsdc({ from: 0, to: investor.address, amount: 20_000_000n });
    const before = await usdcOf(investor.address);
    await stack.testClient.setAutomine(false);
    try {
      await gasless.click();
      await page.getByTestId("gasless-progress").filter({ hasText: "waiting for it to be mined" }).waitFor({ timeout: 30_000 });
      await expect(page.getByRole("alert").count()).resolves.toBe(0);
      expect((await read()).status).toBe("awaiting_payment");
      await capture(page, "05-relay-pending");
      // Back on the screen (a reload) while the relay is on its way: it follows it, and offers no second payment.
      await page.reload();
      await page.getByTestId("gasless-progress").filter({ hasText: "waiting for it to be mined" }).waitFor({ timeout: 30_000 });
      expect(await gasless.isDisabled()).toBe(true);
      expect(await page.getByRole("button", { name: /^Pay 5\.\d{2,6} USDC$/ }).isDisabled()).toBe(true);
    } finally {
      await stack.testClient.setAutomine(true);
    }
    await stack.testClient.mine({ blocks: 1 });
    await page.getByTestId("purchase-status").filter({ hasText: "settled" }).waitFor({ timeout: 60_000 });
    await page.getByText("Paid by signature from your wallet").waitFor();
    expect(await focusedInside(page, "[role=status].ok")).toBe(true);
    await capture(page, "06-settled");

    // In the service: settled, by a transfer of exactly the displayed amount from the investor's
    // wallet to the payment address, sent by the relayer; the investor still has no ETH.
    const settled = await read();
    expect(settled.status).toBe("settled");
    const receipt = await stack.publicClient.getTransactionReceipt({
      hash: settled.settlement?.transactionHash as `0x${string}`,
    });
    expect(isAddressEqual(receipt.from, investor.address)).toBe(false);
    const transfers = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: receipt.logs });
    expect(transfers).toHaveLength(1);
    expect(isAddressEqual(transfers[0]?.args.from as Address, investor.address)).toBe(true);
    expect(isAddressEqual(transfers[0]?.args.to as Address, purchase.payment.recipient)).toBe(true);
    expect(transfers[0]?.args.value).toBe(BigInt(purchase.payment.amount));
    expect(await usdcOf(investor.address)).toBe(before - BigInt(purchase.payment.amount));
    expect(await stack.publicClient.getBalance({ address: investor.address })).toBe(0n);
    expect(wallet.calls.filter((method) => method === "eth_signTypedData_v4")).toHaveLength(3);
    // Each signature was over typed data the service served for this purchase and wallet, as served (viem
    // lower-cases addresses on the way to the wallet, so the comparison ignores case).
    const caseless = (value: unknown) => JSON.parse(JSON.stringify(value).toLowerCase());
    expect(wallet.signed).toHaveLength(2);
    for (const signed of wallet.signed) {
      expect(served.map(caseless)).toContainEqual(caseless(signed));
      expect(signed).toMatchObject({ message: { value: purchase.payment.amount } });
    }
    expect(wallet.calls).not.toContain("eth_sendTransaction");
    expect(wallet.calls).not.toContain("eth_sendRawTransaction");
    await page.close();
  });

  it("never requested anything outside the service's origin", () => {
    const origin = new URL(stack.local.baseUrl).origin;
    expect(requestedUrls.filter((url) => url.startsWith("http") && new URL(url).origin !== origin)).toEqual([]);
    expect(requestedUrls.some((url) => url.includes("/api/rwa/settlements/authorization"))).toBe(true);
  });
});
