import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { type Address, type Hex, isAddressEqual } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { verifySignature } from "../client/src/signature.js";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import { createSession } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

// The console (docs/console.md) in headless Chromium, driven through its own screens
// with an injected EIP-1193 wallet whose keys stay in this process: every role signs
// in with SIWE, and every action goes through the service's API routes.

const ARTIFACTS = freshArtifacts("console-e2e");
const INVESTOR_ACCOUNT = 6;
const CUSTOMER_ACCOUNT = 2;

let stack: TestStack;
let context: BrowserContext;
let chromium: Chromium | undefined;
let receiver: WebhookReceiver;
const requestedUrls: string[] = [];
/** The wallet the injected provider signs with; each role's phase switches it. */
let walletKey: Hex;
const walletCalls: string[] = [];

beforeAll(async () => {
  requireChromium();
  stack = await startTestStack();
  receiver = await startWebhookReceiver();
  chromium = await launchChromium("console", { width: 1280, height: 900 });
  context = chromium.context;
  context.on("request", (request) => requestedUrls.push(request.url()));
  // Signing and sending with the current role's key; reads a wallet answers from its node go to Anvil.
  await injectTestWallet(context, {
    chain: stack.chain,
    rpcUrl: stack.local.rpcUrl,
    key: () => walletKey,
    onRequest: (method) => walletCalls.push(method),
  });
}, 240_000);

// A failed step leaves a picture of every open page (and what the wallet was asked) behind.
afterEach(async (test) => {
  if (test.task.result?.state !== "fail") return;
  for (const [index, page] of context.pages().entries()) {
    await page.screenshot({ path: join(ARTIFACTS, `failure-${test.task.name.slice(0, 30)}-${index}.png`), fullPage: true });
  }
  writeFileSync(join(ARTIFACTS, "failure-wallet-calls.json"), JSON.stringify(walletCalls));
});

afterAll(async () => {
  await chromium?.close();
  await receiver?.close();
  await stack?.stop();
});

async function audit(page: Page, name: string) {
  const blocking = await axeFindings(page, join(ARTIFACTS, `axe-${name}.json`), { blockingOnly: true });
  expect(blocking, `${name}: accessibility violations`).toEqual([]);
}

const screens: string[] = [];
/** A screen at 1280 px and at 390 px: a screenshot of each and axe-core on each. */
async function capture(page: Page, name: string) {
  screens.push(name);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
    await audit(page, `${name}-${width}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function signIn(page: Page, portal: "Investor" | "Partner" | "Issuer" | "Administrator", key: Hex) {
  walletKey = key;
  await page.goto(`${stack.local.baseUrl}/console`);
  await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
  await page.getByRole("radio", { name: new RegExp(`^${portal}`) }).check();
  await page.getByRole("button", { name: "Sign in with wallet" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
  const address = privateKeyToAccount(key).address;
  await page
    .locator("header .address")
    .filter({ hasText: address.slice(0, 6) })
    .waitFor();
}

const go = async (page: Page, label: string) => {
  await page.getByRole("navigation").getByRole("link", { name: label }).click();
};

describe("the console: four roles through their screens in headless Chromium", () => {
  const issuerKey = generatePrivateKey();
  const memberKey = generatePrivateKey();
  const viewerKey = generatePrivateKey();
  const adminKey = () => stack.local.admin.privateKey as Hex;
  const investorKey = () => stack.local.accounts[INVESTOR_ACCOUNT]!.privateKey as Hex;
  const offeringName = "Harbour Terminal Note";

  it("serves the built console with a strict policy, and answers deep links with the app", async () => {
    const root = await fetch(`${stack.local.baseUrl}/console`);
    expect(root.status).toBe(200);
    expect(root.headers.get("content-security-policy")).toContain("connect-src 'self'");
    const html = await root.text();
    expect(html).toContain('<div id="root">');
    const deep = await fetch(`${stack.local.baseUrl}/console/investor/purchases/pur_x`);
    expect(await deep.text()).toBe(html);
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const asset = await fetch(`${stack.local.baseUrl}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toContain("javascript");
    // React's production runtime, whatever NODE_ENV the build ran under (vitest sets "test"):
    // no development JSX calls and no file path of the machine that built it.
    const bundle = await asset.text();
    expect(bundle).not.toContain("jsxDEV");
    expect(bundle).not.toContain(process.cwd());
    expect((await fetch(`${stack.local.baseUrl}/console/assets/..%2F..%2Fbuild.ts`)).status).toBe(404);
  });

  it("admin registers an issuer and a partner member", { timeout: 120_000 }, async () => {
    const page = await context.newPage();
    await page.goto(`${stack.local.baseUrl}/console`);
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    await capture(page, "sign-in");

    // A wallet that is no admin is refused with the problem's title and detail.
    walletKey = investorKey();
    await page.getByRole("radio", { name: /^Administrator/ }).check();
    await page.getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByRole("alert").filter({ hasText: "This wallet cannot use the admin portal" }).waitFor();
    await expect(page.getByRole("alert").textContent()).resolves.toContain("ADMIN_ADDRESSES");
    await capture(page, "sign-in-refused");

    await signIn(page, "Administrator", adminKey());
    await page.getByRole("heading", { name: "Offering review" }).waitFor();
    await capture(page, "admin-review-empty");

    await go(page, "Issuers");
    await page.getByLabel("Issuer wallet").fill(privateKeyToAccount(issuerKey).address);
    await page.getByLabel("Issuer name").fill("Harbour Capital");
    await page.getByRole("button", { name: "Register issuer" }).click();
    await page.getByRole("cell", { name: "Harbour Capital" }).waitFor();
    await capture(page, "admin-issuers");

    await go(page, "Partners");
    const demo = page.locator(".card").filter({ hasText: stack.local.partner.id });
    await demo.getByLabel(/Add a member wallet/).fill(privateKeyToAccount(memberKey).address);
    // An admin member: it will manage keys, webhooks, members and branding below.
    await demo.getByLabel("Role").selectOption("admin");
    await demo.getByRole("button", { name: "Add member" }).click();
    await page.getByRole("status").filter({ hasText: "is now a member of" }).waitFor();
    await capture(page, "admin-partners");

    const members = await (await stack.partnerFetch("/v1/members")).json();
    expect(members.data.map((m: { address: string }) => m.address)).toContain(privateKeyToAccount(memberKey).address);
    await page.close();
  });

  it("issuer drafts and submits an offering", { timeout: 120_000 }, async () => {
    const page = await context.newPage();
    await signIn(page, "Issuer", issuerKey);
    await page.getByRole("heading", { name: "Your offerings" }).waitFor();
    await capture(page, "issuer-offerings-empty");
    await go(page, "New draft");
    await page.getByLabel("Name").fill(offeringName);
    await page.getByLabel("Description").fill("Senior secured note financing a container terminal.");
    // The demo partner's address is not offered: money sent there would be that partner's.
    const offered = await page.getByLabel("Settlement address").locator("option").allTextContents();
    expect(offered.map((a) => a.toLowerCase())).not.toContain(stack.local.partner.paymentAddress.toLowerCase());
    await page.getByLabel("Settlement address").selectOption(stack.deployment.paymentAddresses[1] as string);
    await page.getByLabel("Unit price (USDC)").fill("2.50");
    await capture(page, "issuer-draft");
    await page.getByRole("button", { name: "Save draft" }).click();
    await page.getByRole("heading", { name: offeringName }).waitFor();
    await page.getByTestId("offering-status").filter({ hasText: "draft" }).waitFor();
    await page.getByRole("button", { name: "Submit for review" }).click();
    await page.getByTestId("offering-status").filter({ hasText: "in review" }).waitFor();
    await capture(page, "issuer-offering");
    await page.close();
  });

  it("admin approves the offering and marks the investor eligible", { timeout: 120_000 }, async () => {
    const page = await context.newPage();
    await signIn(page, "Administrator", adminKey());
    await page.getByRole("button", { name: `Approve ${offeringName}` }).waitFor();
    await capture(page, "admin-review");
    await page.getByRole("button", { name: `Approve ${offeringName}` }).click();
    await page.getByText("Nothing here.").waitFor();

    await go(page, "Investors");
    await page.getByLabel("Investor wallet").fill(stack.local.accounts[INVESTOR_ACCOUNT]!.address);
    await page.getByLabel("KYC status").selectOption("approved");
    await page.getByLabel("Jurisdiction").fill("DE");
    await page.getByRole("button", { name: "Save eligibility" }).click();
    await page.getByRole("cell", { name: stack.local.accounts[INVESTOR_ACCOUNT]!.address, exact: false }).first().waitFor();
    await capture(page, "admin-investors");

    for (const [label, name] of [
      ["Unresolved payments", "admin-payments"],
      ["Event deliveries", "admin-deliveries"],
      ["Audit log", "admin-audit"],
    ] as const) {
      await go(page, label);
      await page
        .getByRole("heading", { level: 1, name: label === "Unresolved payments" ? label : undefined })
        .first()
        .waitFor();
      await page.locator("table").first().waitFor();
      await capture(page, name);
    }
    await expect(page.getByRole("cell", { name: "offering.approve" }).count()).resolves.toBeGreaterThan(0);
    await page.close();
  });

  it("investor buys, pays from the wallet, sees it settled and mints the certificate", { timeout: 180_000 }, async () => {
    const page = await context.newPage();
    await signIn(page, "Investor", investorKey());
    await page.getByRole("link", { name: offeringName }).waitFor();
    await page.getByText("You are eligible.").waitFor();
    await capture(page, "investor-offerings");
    await page.getByRole("link", { name: offeringName }).click();
    await page.getByLabel("Units").fill("2");
    await capture(page, "investor-offering");
    await page.getByRole("button", { name: "Reserve and continue to payment" }).click();

    const payButton = page.getByRole("button", { name: /^Pay 5\.\d{2,6} USDC$/ });
    await payButton.waitFor();
    // The displayed amount carries the exact base units on hover.
    const shown = page.locator(".pay .money");
    const exact = (await shown.getAttribute("data-base-units")) as string;
    expect(BigInt(exact) > 5_000_000n && BigInt(exact) < 5_010_000n).toBe(true);
    expect(await shown.getAttribute("title")).toBe(`${exact} base units (6 decimals)`);
    await capture(page, "investor-purchase-pay");
    const purchaseId = page.url().split("/").pop() as string;

    await payButton.click();
    await page.getByTestId("purchase-status").filter({ hasText: "settled" }).waitFor({ timeout: 60_000 });
    await capture(page, "investor-purchase-settled");

    await page.getByRole("button", { name: "Mint certificate" }).click();
    await page.getByTestId("certificate-status").filter({ hasText: "minted" }).waitFor({ timeout: 60_000 });
    await capture(page, "investor-purchase-minted");

    // The transfer the wallet sent is exactly the displayed amount, from the investor's wallet.
    const sendCalls = walletCalls.filter((method) => method === "eth_sendTransaction");
    expect(sendCalls.length).toBeGreaterThanOrEqual(2);
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("console.session") as string).token as string);
    const purchase = await (
      await fetch(`${stack.local.baseUrl}/api/rwa/checkout/${purchaseId}`, { headers: { Authorization: `Bearer ${token}` } })
    ).json();
    expect(purchase).toMatchObject({ status: "settled", certificate: { status: "minted" } });
    const receipt = await stack.publicClient.getTransactionReceipt({ hash: purchase.settlement.transactionHash });
    expect(isAddressEqual(receipt.from, stack.local.accounts[INVESTOR_ACCOUNT]!.address as Address)).toBe(true);
    expect(purchase.payment.amount).toBe(exact);

    for (const [label, name] of [
      ["My purchases", "investor-purchases"],
      ["Certificates", "investor-certificates"],
      ["Profile", "investor-profile"],
    ] as const) {
      await go(page, label);
      await page.getByRole("heading", { level: 1, name: label === "My purchases" ? "My purchases" : label }).waitFor();
      if (name !== "investor-profile") await page.getByRole("cell", { name: "minted" }).waitFor();
      else await page.getByText("Identity check (KYC)").waitFor();
      await capture(page, name);
    }
    await page.close();
  });

  it("partner member sees a settled order, its deliveries, redelivers one and rotates a webhook secret", {
    timeout: 180_000,
  }, async () => {
    // The partner's server side: a webhook endpoint and a commerce order paid on chain.
    const endpoint = await (
      await stack.partnerFetch("/v1/webhook-endpoints", { method: "POST", json: { url: receiver.url("/hooks") } })
    ).json();
    const session = await createSession(stack, { externalOrderId: "console-order-1", idempotencyKey: "console-order-1" });
    await stack.payUsdc({
      from: CUSTOMER_ACCOUNT,
      to: session.payment.recipient as Address,
      amount: BigInt(session.payment.amount),
    });
    await waitFor(async () => (receiver.received.some((hook) => hook.type === "purchase.settled") ? true : undefined), {
      timeoutMs: 60_000,
      what: "purchase.settled to reach the receiver",
    });
    // And an underpaid order: its payment is unresolved until the member attaches it.
    const underpaid = await createSession(stack, { externalOrderId: "console-order-2", idempotencyKey: "console-order-2" });
    const shortPayment = await stack.payUsdc({
      from: CUSTOMER_ACCOUNT,
      to: underpaid.payment.recipient as Address,
      amount: BigInt(underpaid.payment.amount) - 1_000_000n,
    });
    const shortHash = shortPayment.hash.toLowerCase();
    await waitFor(
      async () => {
        const list = await (await stack.partnerFetch("/v1/payments?status=unresolved")).json();
        return list.data.some((row: { transactionHash: string }) => row.transactionHash === shortHash) ? true : undefined;
      },
      { timeoutMs: 60_000, what: "the underpayment to be unresolved" },
    );

    const page = await context.newPage();
    await signIn(page, "Partner", memberKey);
    await page.getByRole("heading", { name: "Sessions and orders" }).waitFor();
    const row = page.getByRole("row").filter({ hasText: "console-order-1" });
    await row.getByText("settled").waitFor();
    await expect(row.locator(".money").textContent()).resolves.toMatch(/^25\.\d{2,6} USDC$/);
    // The paid order's action is on screen at both widths, without scrolling the table sideways.
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      const button = await row.getByRole("button", { name: "Mark fulfilled" }).boundingBox();
      expect(
        button && button.x >= 0 && button.x + button.width <= width,
        `Mark fulfilled at ${width} px: ${JSON.stringify(button)}`,
      ).toBe(true);
      const sideways = await page
        .locator(".table-wrap")
        .first()
        .evaluate((wrap) => wrap.scrollWidth - wrap.clientWidth);
      expect(sideways, `the sessions table scrolls sideways at ${width} px`).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await capture(page, "partner-sessions");

    await go(page, "Payments");
    await page.getByRole("cell", { name: "settled" }).first().waitFor();
    await capture(page, "partner-payments");

    await go(page, "Events");
    const eventLink = page.getByRole("row").filter({ hasText: "purchase.settled" }).getByRole("link");
    await eventLink.waitFor();
    await capture(page, "partner-events");
    await eventLink.click();
    await page.getByRole("heading", { name: "Deliveries" }).waitFor();
    const delivery = page.getByRole("row").filter({ hasText: receiver.url("/hooks") });
    await delivery.getByText("delivered").waitFor({ timeout: 30_000 });
    const before = receiver.received.length;
    await delivery.getByRole("button", { name: "Redeliver" }).click();
    await page.getByRole("status").filter({ hasText: "Queued for redelivery." }).waitFor();
    await waitFor(async () => (receiver.received.length > before ? true : undefined), { what: "the redelivery to arrive" });
    expect(receiver.received.at(-1)?.type).toBe("purchase.settled");
    await delivery.getByText("delivered").waitFor({ timeout: 30_000 });
    await capture(page, "partner-event");

    await go(page, "Webhooks");
    await page.getByRole("cell", { name: new RegExp(endpoint.id) }).waitFor();
    await page.getByRole("button", { name: "Rotate secret" }).click();
    const secret = (await page.getByTestId("secret-value").textContent()) as string;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(endpoint.secret);
    await page.getByText("old secret signs until").waitFor();
    await capture(page, "partner-webhooks-rotated");
    await page.getByRole("button", { name: "I have stored it" }).click();
    await expect(page.getByTestId("secret-value").count()).resolves.toBe(0);

    // A test event, sent now: the receiver gets it signed with the new secret, the screen says how it answered.
    const beforeTest = receiver.received.length;
    await page.getByRole("button", { name: "Send test event" }).click();
    await page.getByRole("status").filter({ hasText: ": acknowledged, HTTP 204" }).waitFor();
    const testHook = receiver.received.slice(beforeTest).find((hook) => hook.type === "webhook.test");
    expect(testHook).toBeDefined();
    verifySignature({
      payload: testHook?.rawBody ?? "",
      header: String(testHook?.headers["service-signature"]),
      secrets: [secret],
    });
    await capture(page, "partner-webhooks-test-event");

    // The underpayment: attached to its order from the Payments screen.
    await go(page, "Payments");
    await page.getByLabel("Payment status").selectOption("unresolved");
    const shortRow = page.getByRole("row").filter({ hasText: `${shortHash.slice(0, 6)}…${shortHash.slice(-4)}` });
    await shortRow.getByRole("cell", { name: "unresolved" }).waitFor();
    await shortRow.getByLabel("Order id").fill(underpaid.orderId);
    await capture(page, "partner-payments-unresolved");
    await shortRow.getByRole("button", { name: "Attach" }).click();
    await page.getByRole("status").filter({ hasText: "Attached to the order." }).waitFor();
    await shortRow.waitFor({ state: "detached" });
    const attachedOrder = await (await stack.partnerFetch(`/v1/orders/${underpaid.orderId}`)).json();
    expect(attachedOrder).toMatchObject({ status: "paid", amountPaid: String(BigInt(underpaid.payment.amount) - 1_000_000n) });

    // Branding: display name and accent colour, as the hosted pages will show them.
    await go(page, "Branding");
    await page.getByLabel("Display name").fill("Console Shop");
    await page.getByLabel("Accent colour").fill("not a colour");
    await page.getByRole("button", { name: "Save branding" }).click();
    await page.getByRole("alert").filter({ hasText: "code: invalid_request" }).waitFor();
    await page.getByLabel("Accent colour").fill("#0b6e4f");
    await page.getByRole("button", { name: "Save branding" }).click();
    await page.getByRole("status").filter({ hasText: "Branding saved." }).waitFor();
    expect(await (await stack.partnerFetch("/v1/branding")).json()).toMatchObject({
      displayName: "Console Shop",
      accentColor: "#0b6e4f",
    });
    await capture(page, "partner-branding");

    await go(page, "API keys");
    await page.getByRole("button", { name: "Create API key" }).click();
    const apiKey = (await page.getByTestId("secret-value").textContent()) as string;
    expect((await fetch(`${stack.local.baseUrl}/v1/events`, { headers: { Authorization: `Bearer ${apiKey}` } })).status).toBe(
      200,
    );
    await capture(page, "partner-api-keys");

    await go(page, "Members");
    await page.getByRole("cell", { name: privateKeyToAccount(memberKey).address }).waitFor();
    // A second wallet with the default role, member: it does the daily work but changes no keys.
    await page.getByLabel("Wallet address").fill(privateKeyToAccount(viewerKey).address);
    await page.getByRole("button", { name: "Add member" }).click();
    await page.getByRole("cell", { name: privateKeyToAccount(viewerKey).address }).waitFor();
    await capture(page, "partner-members");

    // The session ends on the server (as an expiry would): the next call returns to sign-in with a message.
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("console.session") as string).token as string);
    expect(
      (
        await fetch(`${stack.local.baseUrl}/api/partner/auth/logout`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}` },
        })
      ).status,
    ).toBe(204);
    await go(page, "Payments");
    await page.getByRole("status").filter({ hasText: "Your session has expired or was signed out" }).waitFor();
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    await capture(page, "sign-in-expired");

    // The member-role wallet: told up front that it cannot change keys; the service refuses it anyway.
    await signIn(page, "Partner", viewerKey);
    await go(page, "API keys");
    await page.getByText("only an admin member can change it").waitFor();
    await page.getByRole("button", { name: "Create API key" }).click();
    await page.getByRole("alert").filter({ hasText: "code: forbidden" }).waitFor();
    await capture(page, "partner-api-keys-member-role");
    await page.close();
  });

  it("never requested anything outside the service's origin", () => {
    const origin = new URL(stack.local.baseUrl).origin;
    const outside = requestedUrls.filter((url) => url.startsWith("http") && new URL(url).origin !== origin);
    expect(outside).toEqual([]);
    expect(requestedUrls.some((url) => url.includes("/console/assets/"))).toBe(true);
    expect(screens.length).toBeGreaterThan(20);
  });
});
