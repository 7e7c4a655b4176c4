import { join } from "node:path";
import type { BrowserContext, Frame, Locator, Page } from "playwright-core";
import { type Address, getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseUsdc } from "../client/src/index.js";
import { type Shop, startShop } from "../examples/shop/shop.js";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// A customer in headless Chromium (Debian's package, driven by playwright-core; no
// browser is ever downloaded) buys from the sample shop, pays on Anvil and mints the
// certificate with an injected EIP-1193 wallet whose keys stay in this process.

const ARTIFACTS = freshArtifacts("browser-e2e");
const BUYER_ACCOUNT = 5;

let stack: TestStack;
let shop: Shop;
let context: BrowserContext;
let chromium: Chromium | undefined;
const requestedUrls: string[] = [];
const walletCalls: { method: string; params: unknown[] }[] = [];

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  shop = await startShop({ local: stack.local, port: 0 });
  chromium = await launchChromium("e2e", { width: 1100, height: 900 });
  context = chromium.context;
  context.on("request", (request) => requestedUrls.push(request.url()));
  // The buyer's wallet, signing for real against Anvil; the hosted checkout must not read through it.
  await injectTestWallet(context, {
    chain: stack.chain,
    rpcUrl: stack.local.rpcUrl,
    key: () => stack.local.accounts[BUYER_ACCOUNT]!.privateKey as Hex,
    onRequest: (method, params) => walletCalls.push({ method, params }),
    reads: "refuse",
  });
});

afterAll(async () => {
  await chromium?.close();
  await shop?.stop();
  await stack?.stop();
});

async function screenshot(page: Page, name: string) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * A state shot at 1280 and 390 px wide, then back to the flow's 1100. `shown` is scrolled
 * into view after each resize: a framed checkout keeps its focused field in view while
 * the component catches up with the new height, which would leave the state out of the shot.
 */
async function screenshotWideAndPhone(page: Page, name: string, shown: Locator) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await shown.scrollIntoViewIfNeeded();
    await screenshot(page, `${name}-${width}`);
  }
  await page.setViewportSize({ width: 1100, height: 900 });
}

/** axe-core inside the page or frame; serious and critical violations fail the test. */
async function audit(target: Page | Frame, name: string) {
  const blocking = await axeFindings(target, join(ARTIFACTS, `axe-${name}.json`), { blockingOnly: true });
  expect(blocking, `${name}: accessibility violations`).toEqual([]);
}

function checkoutFrame(page: Page): Frame {
  const frame = page.frames().find((candidate) => new URL(candidate.url()).pathname.startsWith("/checkout/"));
  if (frame === undefined) throw new Error("the checkout frame is not there");
  return frame;
}

describe("a customer buys in the sample shop, pays, and mints the certificate (headless Chromium)", () => {
  it("runs the whole flow in a real browser", { timeout: 180_000 }, async () => {
    const page = await context.newPage();

    // 1. Catalogue and cart.
    await page.goto(shop.url);
    await page.getByRole("heading", { name: "Harbour Goods", level: 1 }).waitFor();
    await screenshot(page, "01-catalogue");
    await page.getByRole("button", { name: "Add Blue organic tee to cart" }).click();
    await page.waitForURL(`${shop.url}/cart`);
    expect(await page.locator("#cart-total").textContent()).toBe("25.000000 USDC");
    await screenshot(page, "02-cart");
    await page.getByRole("button", { name: "Check out with USDC" }).click();
    await page.waitForURL(/\/orders\/hg-[0-9a-f]+$/);
    const shopOrderId = new URL(page.url()).pathname.split("/").pop() as string;

    // 2. The hosted checkout, framed by the component: contact and delivery.
    const frame = page.frameLocator("#checkout iframe");
    await frame.locator("#email").waitFor();
    expect(await frame.locator("#delivery-fields").isVisible()).toBe(true);
    await frame.locator("#email").fill("ada@example.com");
    await frame.locator("#contact-name").fill("Ada Lovelace");
    await frame.locator("#delivery-name").fill("Ada Lovelace");
    await frame.locator("#line1").fill("1 Rua das Flores");
    await frame.locator("#postal-code").fill("4050-262");
    await frame.locator("#city").fill("Porto");
    await frame.locator("#country").fill("pt");
    await screenshot(page, "03-checkout-details");
    await audit(checkoutFrame(page), "checkout-details");
    await frame.getByRole("button", { name: "Continue to payment" }).click();

    // 3. The payment step: the amount and address the customer sees.
    await frame.locator("#amount").waitFor();
    await frame.locator("#qr svg").waitFor();
    const shownAmount = (await frame.locator("#amount").textContent()) as string;
    const recipient = (await frame.locator("#recipient").textContent()) as Address;
    const amount = parseUsdc(shownAmount);
    expect(amount - 25_000_000n).toBeGreaterThanOrEqual(1n);
    expect(amount - 25_000_000n).toBeLessThanOrEqual(9_999n);
    expect(await frame.locator("#network").textContent()).toContain("chain id 31337");
    expect(await frame.locator("#countdown").textContent()).toMatch(/^(29|30):\d\d$/);
    expect(await page.locator("#checkout-state").textContent()).toBe("Waiting for your payment.");
    await screenshot(page, "04-checkout-payment");
    await audit(checkoutFrame(page), "checkout-payment");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "05-checkout-payment-mobile");
    await page.setViewportSize({ width: 1100, height: 900 });

    // 4. The test pays on Anvil, then the customer enters the hash. The frame's status
    // poll is held meanwhile, so the hash form is still there to use.
    let releasePolls = () => {};
    const pollsHeld = new Promise<void>((resolve) => {
      releasePolls = resolve;
    });
    const validatePath = "**/v1/public/checkout/sessions/*/validate";
    await context.route(validatePath, async (route) => {
      await pollsHeld;
      await route.continue();
    });
    const paid = await stack.payUsdc({ from: 1, to: recipient, amount });
    // Until the index holds the transfer the service answers "seen, pending" and leaves the
    // rest to the (held) poll: the customer here submits a hash the index already has.
    await waitFor(
      async () => {
        const page = await (await stack.partnerFetch(`/v1/transfers?txHash=${paid.hash}`)).json();
        return page.data.length > 0 ? true : undefined;
      },
      { what: "the payment in the index" },
    );
    // The first submissions lose their connection (a restart, a dropped network): the page
    // does not call that a refusal; it says so and sends the hash again by itself.
    let hashConnected = false;
    const paymentsPath = "**/v1/public/checkout/payments";
    await context.route(paymentsPath, (route) => (hashConnected ? route.continue() : route.abort("connectionreset")));
    await frame.locator("#transaction-hash").fill(paid.hash);
    await frame.getByRole("button", { name: "Submit transaction hash" }).click();
    await frame
      .locator("#status")
      .filter({ hasText: /checks the hash again by itself/ })
      .waitFor();
    expect(await frame.locator("#hash-error").isHidden()).toBe(true);
    await screenshotWideAndPhone(page, "05b-checkout-hash-retrying", frame.locator("#status"));
    await audit(checkoutFrame(page), "checkout-hash-retrying");
    hashConnected = true;
    await frame
      .locator("#status")
      .filter({ hasText: /Payment (received|found)/ })
      .waitFor({ timeout: 30_000 });
    await context.unroute(paymentsPath);
    releasePolls();
    // A held poll the frame has given up on in the meantime (it saw the settlement
    // first) can no longer be continued; that is not a failure of the flow.
    await context.unrouteAll({ behavior: "ignoreErrors" });

    // 5. Completion: the frame, then the shop page through the component's callback.
    await frame.locator("#done-step").waitFor({ timeout: 60_000 });
    expect(await frame.locator("#done-hash").textContent()).toBe(paid.hash);
    await page.locator("#thanks").waitFor();
    expect(await page.locator("#thanks-message").textContent()).toContain(paid.hash);
    expect(await page.locator("#thanks-message").textContent()).toContain(shopOrderId);
    expect(await page.locator("#checkout-state").getAttribute("data-state")).toBe("settled");
    await screenshot(page, "06-checkout-complete");

    // 6. The shop's server: purchase.settled arrives once, and the shop fulfils through the API.
    const order = await waitFor(
      async () => {
        const current = shop.store.order(shopOrderId);
        return current?.status === "fulfilled" ? current : undefined;
      },
      { what: "the shop to fulfil on purchase.settled" },
    );
    const settledEvents = shop.store.appliedEvents().filter((event) => event.type === "purchase.settled");
    expect(settledEvents).toHaveLength(1);
    expect(settledEvents[0]!.data).toMatchObject({ externalOrderId: shopOrderId, transactionHash: paid.hash });
    const serviceOrder = await shop.client.orders.retrieve(order.service_order_id as string);
    expect(serviceOrder).toMatchObject({
      status: "fulfilled",
      fulfilment: { reference: `ship-${shopOrderId}` },
      contact: { email: "ada@example.com", name: "Ada Lovelace" },
      delivery: { city: "Porto", country: "PT" },
    });
    await page.locator("#order-status[data-status='fulfilled']").waitFor();

    // A redelivery of the same event is acknowledged (204) and changes nothing.
    const settledId = settledEvents[0]!.id;
    await shop.client.events.redeliver(settledId, { endpointId: shop.webhookEndpoint.id });
    await waitFor(
      async () => {
        const [delivery] = await shop.client.events.deliveries(settledId);
        return delivery?.status === "delivered" && delivery.lastStatusCode === 204 ? true : undefined;
      },
      { what: "the redelivery to be answered 204" },
    );
    expect(shop.store.appliedEvents().filter((event) => event.type === "purchase.settled")).toHaveLength(1);

    // 7. The claim page, opened by the shop's form (token in the POST body), minting with the injected wallet.
    await page.getByRole("button", { name: "Claim your certificate" }).click();
    await page.waitForURL(`${stack.local.baseUrl}/claim/**`);
    await page.getByRole("button", { name: "Connect wallet" }).waitFor();
    await page.locator("#status").filter({ hasText: "Connect the wallet" }).waitFor();
    await screenshot(page, "07-claim");
    await audit(page, "claim");
    await page.getByRole("button", { name: "Connect wallet" }).click();
    const buyer = stack.wallet(BUYER_ACCOUNT).account!.address;
    await page.locator("#account").filter({ hasText: buyer }).waitFor();
    await screenshot(page, "08-claim-connected");
    // The status polls after the mint is sent lose their connection (a restart, a dropped
    // network): the page says so and keeps asking rather than freezing.
    let connected = false;
    const claimValidate = "**/v1/public/checkout/sessions/*/validate";
    await page.route(claimValidate, (route) => (connected ? route.continue() : route.abort("connectionreset")));
    await page.getByRole("button", { name: "Mint certificate" }).click();
    await page.locator("#status").filter({ hasText: "tries again by itself" }).waitFor({ timeout: 30_000 });
    await screenshotWideAndPhone(page, "08b-claim-retrying", page.locator("#status"));
    await audit(page, "claim-retrying");
    connected = true;
    await page.locator("#status").filter({ hasText: "Certificate minted." }).waitFor({ timeout: 30_000 });
    await page.unroute(claimValidate);
    const sent = walletCalls.filter((call) => call.method === "eth_sendTransaction");
    expect(sent).toHaveLength(1);
    const mintHash = (await page.locator("#mint-hash").textContent()) as string;
    expect(mintHash).toMatch(/^0x[0-9a-f]{64}$/);
    await screenshot(page, "09-claim-minted");
    await audit(page, "claim-minted");

    // 8. certificate.minted reaches the shop.
    await waitFor(async () => (shop.store.order(shopOrderId)?.certificate_status === "minted" ? true : undefined), {
      what: "certificate.minted at the shop",
    });
    expect(shop.store.order(shopOrderId)?.certificate_transaction).toBe(mintHash);
    expect(shop.store.appliedEvents().filter((event) => event.type === "certificate.minted")).toHaveLength(1);
    expect((await shop.client.orders.retrieve(serviceOrder.id)).certificate).toMatchObject({
      status: "minted",
      owner: getAddress(buyer),
      mintTransactionHash: mintHash,
    });

    // Nothing but the shop and the service was ever requested, and no URL carried a client token.
    const origins = new Set(requestedUrls.filter((url) => url.startsWith("http")).map((url) => new URL(url).origin));
    expect([...origins].sort()).toEqual([new URL(shop.url).origin, new URL(stack.local.baseUrl).origin].sort());
    expect(requestedUrls.filter((url) => url.includes("ct_"))).toEqual([]);
  });
});
