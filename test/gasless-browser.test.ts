import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { type Address, erc20Abi, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Chromium, freshArtifacts, launchChromium, requireChromium } from "./support/browser.js";
import { createSession, readOrder, readSession } from "./support/checkout-helpers.js";
import { closeServer } from "./support/close-server.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// A customer whose wallet holds USDC and no ETH at all pays the hosted checkout in
// headless Chromium (Debian's package through playwright-core) by signing an EIP-3009
// authorization in an injected EIP-1193 wallet; the service relays it and the session
// settles from the index.

const ARTIFACTS = freshArtifacts("gasless-browser");

let stack: TestStack;
let context: BrowserContext;
let chromium: Chromium | undefined;
let shopPage: Server;
let shopOrigin: string;
const payer = privateKeyToAccount(generatePrivateKey());
const walletCalls: string[] = [];

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  // The shop's page: it frames the hosted checkout through the component, nothing else.
  shopPage = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const sessionId = JSON.stringify(url.searchParams.get("session"));
    const clientToken = JSON.stringify(url.searchParams.get("token"));
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<main><h1>Checkout</h1><div id="checkout"></div></main>
<script src="${stack.ponder.baseUrl}/assets/checkout-component.js"></script>
<script>UsdcCheckout.mount(document.getElementById("checkout"), { sessionId: ${sessionId}, clientToken: ${clientToken} });</script>
</body></html>`);
  });
  await new Promise<void>((resolve) => shopPage.listen(0, "127.0.0.1", resolve));
  shopOrigin = `http://127.0.0.1:${(shopPage.address() as AddressInfo).port}`;
  chromium = await launchChromium("gasless", { width: 1000, height: 1100 });
  context = chromium.context;
  await injectWallet(context);
}, 300_000);

afterAll(async () => {
  await chromium?.close();
  await closeServer(shopPage);
  await stack?.stop();
});

/** `window.ethereum` in every frame, signing in this process with the payer's key (which has no ETH to send anything). */
async function injectWallet(browser: BrowserContext) {
  const chainIdHex = `0x${stack.chain.id.toString(16)}`;
  await browser.exposeFunction("__gaslessWalletRequest", async (method: string, params: unknown[]) => {
    walletCalls.push(method);
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [payer.address];
      case "eth_chainId":
        return chainIdHex;
      case "eth_signTypedData_v4": {
        const [from, json] = params as [Address, string];
        if (from.toLowerCase() !== payer.address.toLowerCase()) throw new Error("unknown signer");
        const { domain, types, primaryType, message } = JSON.parse(json);
        const { EIP712Domain: _domainType, ...messageTypes } = types;
        return payer.signTypedData({ domain, types: messageTypes, primaryType, message });
      }
      default:
        throw new Error(`test wallet: ${method} is not supported`);
    }
  });
  await browser.addInitScript(() => {
    const target = window as unknown as Record<string, unknown>;
    const forward = target.__gaslessWalletRequest as (method: string, params: unknown[]) => Promise<unknown>;
    target.ethereum = {
      request: ({ method, params }: { method: string; params?: unknown[] }) => forward(method, params ?? []),
      on: () => undefined,
      removeListener: () => undefined,
    };
  });
}

const usdcBalance = (address: Address) =>
  stack.publicClient.readContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });

describe("hosted checkout: pay from a connected wallet, no ETH needed (headless Chromium)", () => {
  it("settles a session paid by signature from a wallet without ETH", { timeout: 180_000 }, async () => {
    const session = await createSession(stack, { shippingRequired: false, totalPriceUsdc: "12000000" });
    await stack.payUsdc({ from: 0, to: payer.address, amount: 50_000_000n });
    expect(await stack.publicClient.getBalance({ address: payer.address })).toBe(0n);

    const page = await context.newPage();
    await page.goto(`${shopOrigin}/?session=${session.id}&token=${encodeURIComponent(session.clientToken)}`);
    const frame = page.frameLocator("#checkout iframe");
    await frame.locator("#email").waitFor();
    await frame.locator("#email").fill("grace@example.com");
    await frame.getByRole("button", { name: "Continue to payment" }).click();

    // The plain transfer stays the default; the gasless option sits beside it.
    await frame.locator("#amount").waitFor();
    expect(await frame.locator("#hash-form").isVisible()).toBe(true);
    const gasless = frame.getByRole("button", { name: "Pay from a connected wallet, no ETH needed" });
    await gasless.waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "01-payment-options.png"), fullPage: true });

    await gasless.click();
    await frame.locator("#gasless-status", { hasText: "Payment sent" }).waitFor({ timeout: 30_000 });
    await frame.getByRole("heading", { name: "Payment received" }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: join(ARTIFACTS, "02-settled.png"), fullPage: true });

    expect(walletCalls).toContain("eth_signTypedData_v4");
    expect(walletCalls).not.toContain("eth_sendTransaction");
    const settled = await readSession(stack, session.id);
    expect(settled.status).toBe("settled");
    const order = await waitFor(
      async () => {
        const read = await readOrder(stack, settled.orderId);
        return read.payment?.relay?.gasCostWei ? read : undefined;
      },
      { what: "the relay's gas on the order" },
    );
    expect(order.payment.from.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(order.payment.amount).toBe(session.payment.amount);
    expect((await frame.locator("#done-hash").textContent()) as Hex).toBe(order.payment.transactionHash);
    expect(await usdcBalance(payer.address)).toBe(50_000_000n - BigInt(session.payment.amount));
    expect(await stack.publicClient.getBalance({ address: payer.address })).toBe(0n);
    await page.close();
  });
});
