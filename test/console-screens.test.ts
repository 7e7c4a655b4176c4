import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import {
  type Address,
  createWalletClient,
  encodeAbiParameters,
  erc20Abi,
  type Hex,
  http,
  isAddressEqual,
  keccak256,
  pad,
  parseEventLogs,
  toHex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import { type CreatedSession, createSession, submitHash } from "./support/checkout-helpers.js";
import {
  adminWallet,
  api,
  signIn as apiSignIn,
  expectJson,
  openOffering,
  portalWallet,
  registerIssuer,
  signIn,
} from "./support/portal-client.js";
import { putProvenFundingAddress } from "./support/reward-funding.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The console's screens in headless Chromium on one stack of the default configuration, for what were 3
// files (console-auditor, console-gasless, rewards-console): a describe block each, run in that order,
// each reading the stack through sharedStack(). The Auditor view runs first, on a fresh partner's books;
// the rewards screens last, on a demo partner still without a funding address. One start, not 3.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("console-auditor", () => {
  // The console's Auditor view (docs/console.md) in headless Chromium: a partner member
  // signs in with SIWE, picks a period, sees the payment address reconciled to the chain
  // after a real payment on Anvil, the payment in the ledger, and downloads the CSVs.

  const ARTIFACTS = freshArtifacts("console-auditor");
  const CUSTOMER_ACCOUNT = 2;
  const LEDGER_HEADER =
    "kind,reason,chain_id,block_number,block_time,block_hash,transaction_hash,log_index,from,to,value,value_usdc,payment_address,order_id,external_order_id,refund_id,reward_id,metadata,period_id,entry_kind,balance_effect,balance_effect_usdc";
  const RECONCILIATION_HEADER =
    "chain_id,partner_id,payment_address,role,from_block,to_block,opening_balance,opening_balance_usdc,closing_balance,closing_balance_usdc,chain_balance,chain_balance_usdc,difference,difference_usdc,reconciled,settled,settled_usdc,underpaid,underpaid_usdc,overpaid,overpaid_usdc,late,late_usdc,unmatched_in,unmatched_in_usdc,refund,refund_usdc,unmatched_out,unmatched_out_usdc,reward_claim,reward_claim_usdc,subscription_charge,subscription_charge_usdc,adjustment,adjustment_usdc";
  const ORDERS_HEADER =
    "id,external_order_id,status,network,chain_id,total_price,total_price_usdc,amount_paid,amount_paid_usdc,amount_refunded,amount_refunded_usdc,refund_status,transaction_hash,log_index,block_number,payer,payment_address,created_at,updated_at,metadata";

  let stack: TestStack;
  let context: BrowserContext;
  let chromium: Chromium | undefined;
  const requestedUrls: string[] = [];
  const memberKey = generatePrivateKey();
  /** The key the page's injected wallet signs with: the member's, then the admin's (the operator's view). */
  let walletKey: Hex = memberKey;
  let session: CreatedSession;
  let paymentHash: string;
  /** The second partner test 1 makes (through the admin portal); the admin's view reads both. */
  let rivalId: string;

  beforeAll(async () => {
    requireChromium();
    stack = sharedStack();
    // A member of the local partner, and a real payment on Anvil that settles its order.
    await expectJson(
      await stack.partnerFetch("/v1/members", {
        method: "POST",
        json: { address: privateKeyToAccount(memberKey).address },
      }),
      201,
    );
    session = await createSession(stack, { externalOrderId: "auditor-order-1", idempotencyKey: "auditor-order-1" });
    const paid = await stack.payUsdc({
      from: CUSTOMER_ACCOUNT,
      to: session.payment.recipient as Address,
      amount: BigInt(session.payment.amount),
    });
    paymentHash = paid.hash.toLowerCase();
    await waitFor(
      async () => {
        const order = await (await stack.partnerFetch(`/v1/orders/${session.orderId}`)).json();
        return order.status === "paid" || order.status === "fulfilled" ? true : undefined;
      },
      { timeoutMs: 60_000, what: "the order to be paid" },
    );
    chromium = await launchChromium("console-auditor", { width: 1280, height: 900 });
    context = chromium.context;
    context.on("request", (request) => requestedUrls.push(request.url()));
    await injectTestWallet(context, { chain: stack.chain, rpcUrl: stack.local.rpcUrl, key: () => walletKey });
  }, 240_000);

  afterAll(async () => {
    await chromium?.close();
  });

  /** A screen at 1280 px and at 390 px: a full-page screenshot of each and axe-core on each. */
  async function capture(page: Page, name: string) {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
      const blocking = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${width}.json`), { blockingOnly: true });
      expect(blocking, `${name} at ${width} px: accessibility violations`).toEqual([]);
      // Nothing wider than the viewport except inside a table's own scrolling box.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${name} at ${width} px: the page scrolls sideways`).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  async function download(page: Page, button: string): Promise<{ name: string; text: string }> {
    const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: button }).click()]);
    const path = await file.path();
    return { name: file.suggestedFilename(), text: readFileSync(path, "utf8") };
  }

  describe("the console's Auditor view for a partner's members", () => {
    it("refuses the member routes without a session, has no write method, and another partner's member sees only its own books", async () => {
      const anonymous = await api(stack, "GET", "/api/partner/reports/reconciliation?fromBlock=1&toBlock=2");
      expect(anonymous.status).toBe(401);
      // The ledger behind a member session is read-only: no write method answers.
      const token = await apiSignIn(stack, "partner", portalWallet(memberKey));
      const post = await api(stack, "POST", "/api/partner/ledger?fromBlock=1&toBlock=2", { token, json: {} });
      expect([404, 405]).toContain(post.status);

      // A member of another partner reads that partner's books: neither our address nor our payment.
      const adminToken = await apiSignIn(stack, "admin", adminWallet(stack));
      const rival = await expectJson(
        await api(stack, "POST", "/api/admin/partners", { token: adminToken, json: { name: "Rival shop" } }),
        201,
      );
      rivalId = rival.partner.id;
      const rivalMember = portalWallet(generatePrivateKey());
      await expectJson(
        await api(stack, "POST", `/api/admin/partners/${rival.partner.id}/members`, {
          token: adminToken,
          json: { address: rivalMember.address },
        }),
        201,
      );
      const rivalToken = await apiSignIn(stack, "partner", rivalMember);
      const { blockNumber } = await stack.publicClient.getTransactionReceipt({ hash: paymentHash as Hex });
      const range = `fromBlock=1&toBlock=${blockNumber}`;
      const theirs = await expectJson(
        await api(stack, "GET", `/api/partner/reports/reconciliation?${range}`, { token: rivalToken }),
        200,
      );
      const ours = await expectJson(await api(stack, "GET", `/api/partner/reports/reconciliation?${range}`, { token }), 200);
      const addresses = (body: { data: { paymentAddress: string }[] }) =>
        body.data.map((row) => row.paymentAddress.toLowerCase());
      expect(addresses(ours)).toContain(session.payment.recipient.toLowerCase());
      expect(addresses(theirs)).not.toContain(session.payment.recipient.toLowerCase());
      const theirLedger = await api(stack, "GET", `/api/partner/ledger?${range}`, {
        token: rivalToken,
        headers: { Accept: "text/csv" },
      });
      expect(theirLedger.status).toBe(200);
      expect((await theirLedger.text()).toLowerCase()).not.toContain(paymentHash);
    });

    it("shows the payment address reconciled after a real payment, the payment in the ledger, and downloads the CSVs", {
      timeout: 180_000,
    }, async () => {
      const page = await context.newPage();
      await page.goto(`${stack.local.baseUrl}/console`);
      await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
      await page.getByRole("radio", { name: /^Partner/ }).check();
      await page.getByRole("button", { name: "Sign in with wallet" }).click();
      await page.getByRole("button", { name: "Sign out" }).waitFor();

      await page.getByRole("navigation").getByRole("link", { name: "Auditor" }).click();
      await page.getByRole("heading", { name: "Auditor", level: 1 }).waitFor();

      // The default period (the last 30 days to today, UTC) covers the payment.
      const recipient = session.payment.recipient.toLowerCase();
      const reconciliation = page.getByRole("region", { name: "Per payment address, unreconciled first" });
      const addressRow = reconciliation.getByRole("row").filter({ has: page.locator(`code[title="${recipient}" i]`) });
      await addressRow.getByText("reconciled", { exact: true }).waitFor({ timeout: 30_000 });
      await expect(addressRow.getByText("none", { exact: true }).count()).resolves.toBe(1);
      await page.getByText("Every payment address reconciles to the base unit.").waitFor();
      await expect(
        addressRow
          .locator(".sums")
          .textContent()
          .then((text) => text ?? ""),
      ).resolves.toContain("settled:");

      const ledger = page.getByRole("region", { name: "Every movement, oldest first" });
      const paymentRow = ledger.getByRole("row").filter({ has: page.locator(`code[title="${paymentHash}" i]`) });
      await paymentRow.waitFor();
      await expect(paymentRow.locator(".status").textContent()).resolves.toBe("settled");
      await expect(paymentRow.locator(".money").getAttribute("data-base-units")).resolves.toBe(session.payment.amount);

      // No write button on this screen: the period's submit and the three downloads only.
      const buttons = await page.locator("main button").allTextContents();
      expect(buttons.sort()).toEqual(
        ["Download ledger (CSV)", "Download orders (CSV)", "Download reconciliation (CSV)", "Show period"].sort(),
      );
      await capture(page, "auditor");

      const ledgerCsv = await download(page, "Download ledger (CSV)");
      expect(ledgerCsv.name).toMatch(/^ledger-.+\.csv$/);
      expect(ledgerCsv.text.startsWith(`${LEDGER_HEADER}\r\n`)).toBe(true);
      expect(ledgerCsv.text.toLowerCase()).toContain(paymentHash);
      const reconciliationCsv = await download(page, "Download reconciliation (CSV)");
      expect(reconciliationCsv.text.startsWith(`${RECONCILIATION_HEADER}\r\n`)).toBe(true);
      expect(reconciliationCsv.text.toLowerCase()).toContain(recipient);
      const ordersCsv = await download(page, "Download orders (CSV)");
      expect(ordersCsv.text.startsWith(`${ORDERS_HEADER}\r\n`)).toBe(true);
      expect(ordersCsv.text).toContain(session.orderId);

      // A block range: the payment's own block alone still shows it, and a reversed range is refused plainly.
      const receipt = await stack.publicClient.getTransactionReceipt({ hash: paymentHash as Hex });
      await page.getByLabel("Period by").selectOption("blocks");
      await page.getByLabel("From block").fill(String(receipt.blockNumber));
      await page.getByLabel("To block (inclusive)").fill(String(receipt.blockNumber));
      await page.getByRole("button", { name: "Show period" }).click();
      await page.getByText(`Blocks ${receipt.blockNumber} to ${receipt.blockNumber} (inclusive).`).waitFor();
      await paymentRow.waitFor();
      await page.getByLabel("From block").fill(String(receipt.blockNumber + 1n));
      await page.getByLabel("To block (inclusive)").fill(String(receipt.blockNumber));
      await page.getByRole("button", { name: "Show period" }).click();
      await page.getByRole("alert").filter({ hasText: "invalid_range" }).first().waitFor();
      // Under a refused range no table claims the period is empty.
      await expect(page.getByText("No movement in this period.").count()).resolves.toBe(0);
      await capture(page, "auditor-reversed-range");

      // A mismatch is never hidden: money that reaches the address without a Transfer log (its balance
      // slot written straight on Anvil, as a faulty or rebasing token would) leaves the books short.
      const usdc = stack.local.contracts.usdc as Address;
      const balanceOf = () =>
        stack.publicClient.readContract({
          address: usdc,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [recipient as Address],
        });
      const before = await balanceOf();
      // TestUSDC is OpenZeppelin's ERC20: `_balances` is storage slot 0.
      const slot = keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [recipient as Address, 0n]));
      await stack.testClient.setStorageAt({ address: usdc, index: slot, value: pad(toHex(before + 1_000_000n)) });
      await stack.testClient.mine({ blocks: 1 });
      expect(await balanceOf()).toBe(before + 1_000_000n);
      await page.getByLabel("Period by").selectOption("dates");
      await page.getByRole("button", { name: "Show period" }).click();
      await waitFor(
        async () => {
          await page.reload();
          await page.getByRole("heading", { name: "Auditor", level: 1 }).waitFor();
          await page.getByText(/^Blocks \d+ to \d+/).waitFor();
          return (await page.getByText("1 payment address does not reconcile:").count()) > 0 ? true : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 500, what: "the reconciliation to show the mismatch" },
      );
      await addressRow.getByText("unreconciled", { exact: true }).waitFor();
      await addressRow.getByText("+1.00 USDC", { exact: true }).waitFor();
      await addressRow.getByText("more on chain than in the books").waitFor();
      await expect(reconciliation.getByRole("row").nth(1).getAttribute("class")).resolves.toBe("unreconciled");
      await page
        .getByRole("alert")
        .filter({ hasText: `${recipient.slice(2, 6)}` })
        .filter({ hasText: "(+1.00 USDC)" })
        .first()
        .waitFor();
      await capture(page, "auditor-unreconciled");

      // Every request the page made stayed on the service's origin.
      const origin = new URL(stack.local.baseUrl).origin;
      const foreign = requestedUrls.filter(
        (url) => !url.startsWith(origin) && !url.startsWith("blob:") && !url.startsWith("data:"),
      );
      expect(foreign).toEqual([]);
      await page.close();
    });
  });

  // The operator's view across partners (docs/accounting.md, "The operator's books"): the same
  // handlers behind an admin session at /api/admin/ledger, /api/admin/reports and /api/admin/orders.
  describe("the console's Auditor view for the operator, across partners", () => {
    const rivalAddress = privateKeyToAccount(generatePrivateKey()).address;
    let adminToken: string;
    let range: string;

    beforeAll(async () => {
      adminToken = await apiSignIn(stack, "admin", adminWallet(stack));
      // The rival partner (test 1) gets a payment address of its own: two partners' addresses to reconcile.
      await expectJson(
        await api(stack, "POST", `/api/admin/partners/${rivalId}/payment-addresses`, {
          token: adminToken,
          json: { network: stack.local.network, address: rivalAddress },
        }),
        201,
      );
      const { blockNumber } = await stack.publicClient.getTransactionReceipt({ hash: paymentHash as Hex });
      range = `fromBlock=1&toBlock=${blockNumber}`;
    });

    it("refuses an anonymous visitor, an investor's, an issuer's and a partner member's session, and a partner's API key", async () => {
      const paths = [
        `/api/admin/reports/reconciliation?${range}`,
        `/api/admin/ledger?${range}`,
        `/api/admin/orders?${range}`,
        `/api/admin/orders/${session.orderId}/evidence`,
      ];
      const investor = await apiSignIn(stack, "investor", portalWallet(generatePrivateKey()));
      const issuerWallet = portalWallet(generatePrivateKey());
      await registerIssuer(stack, adminToken, issuerWallet, "Books issuer");
      const issuer = await apiSignIn(stack, "issuer", issuerWallet);
      const member = await apiSignIn(stack, "partner", portalWallet(memberKey));
      for (const path of paths) {
        const anonymous = await api(stack, "GET", path);
        expect(anonymous.status, path).toBe(401);
        expect((await anonymous.json()).code, path).toBe("unauthenticated");
        for (const [who, token] of [
          ["investor", investor],
          ["issuer", issuer],
          ["partner member", member],
        ] as const) {
          const refused = await api(stack, "GET", path, { token, headers: { Accept: "text/csv" } });
          expect(refused.status, `${who} ${path}`).toBe(403);
          expect((await refused.json()).code, `${who} ${path}`).toBe("wrong_portal");
        }
        // A partner's API key is no portal session.
        const keyed = await stack.partnerFetch(path);
        expect(keyed.status, path).toBe(401);
        await keyed.arrayBuffer();
      }
      // Nothing but reads is mounted there, even for the admin: fulfilling an order is not the operator's.
      for (const path of [`/api/admin/ledger?${range}`, `/api/admin/orders/${session.orderId}/fulfil`]) {
        const write = await api(stack, "POST", path, { token: adminToken, json: {} });
        expect([404, 405], path).toContain(write.status);
      }
      const unknown = await api(stack, "GET", `/api/admin/ledger?${range}&partnerId=ptr_nobody`, { token: adminToken });
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).code).toBe("not_found");
      const reversed = await api(stack, "GET", "/api/admin/reports/reconciliation?fromBlock=9&toBlock=2", { token: adminToken });
      expect(reversed.status).toBe(400);
      expect((await reversed.json()).code).toBe("invalid_range");
    });

    it("reads every partner's books in one reconciliation, narrows to one with partnerId, and reads any partner's order", async () => {
      const ours = session.payment.recipient.toLowerCase();
      const all = await expectJson(
        await api(stack, "GET", `/api/admin/reports/reconciliation?${range}`, { token: adminToken }),
        200,
      );
      const rows = all.data as { partnerId: string; paymentAddress: string; reconciled: boolean }[];
      const partnerOf = new Map(rows.map((row) => [row.paymentAddress.toLowerCase(), row.partnerId]));
      expect(partnerOf.get(ours)).toBe(stack.local.partner.id);
      expect(partnerOf.get(rivalAddress.toLowerCase())).toBe(rivalId);
      // The same as a platform auditor key across partners would read: the same handler, the same rows.
      const narrowed = await expectJson(
        await api(stack, "GET", `/api/admin/reports/reconciliation?${range}&partnerId=${rivalId}`, { token: adminToken }),
        200,
      );
      expect(narrowed.data.map((row: { paymentAddress: string }) => row.paymentAddress.toLowerCase())).toEqual([
        rivalAddress.toLowerCase(),
      ]);
      const ledgerAll = await api(stack, "GET", `/api/admin/ledger?${range}`, {
        token: adminToken,
        headers: { Accept: "text/csv" },
      });
      expect(ledgerAll.status).toBe(200);
      expect((await ledgerAll.text()).toLowerCase()).toContain(paymentHash);
      const ledgerRival = await api(stack, "GET", `/api/admin/ledger?${range}&partnerId=${rivalId}`, {
        token: adminToken,
        headers: { Accept: "text/csv" },
      });
      expect((await ledgerRival.text()).toLowerCase()).not.toContain(paymentHash);
      const order = await expectJson(await api(stack, "GET", `/api/admin/orders/${session.orderId}`, { token: adminToken }), 200);
      expect(order.id).toBe(session.orderId);
      const evidence = await expectJson(
        await api(stack, "GET", `/api/admin/orders/${session.orderId}/evidence`, { token: adminToken }),
        200,
      );
      expect(JSON.stringify(evidence).toLowerCase()).toContain(paymentHash);
    });

    it("shows both partners' addresses with a partner column, the mismatch first, filters by partner and downloads", {
      timeout: 180_000,
    }, async () => {
      walletKey = stack.local.admin.privateKey as Hex;
      const seen = requestedUrls.length;
      const page = await context.newPage();
      await page.goto(`${stack.local.baseUrl}/console`);
      await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
      await page.getByRole("radio", { name: /^Administrator/ }).check();
      await page.getByRole("button", { name: "Sign in with wallet" }).click();
      await page.getByRole("button", { name: "Sign out" }).waitFor();
      await page.getByRole("navigation").getByRole("link", { name: "Auditor" }).click();
      await page.getByRole("heading", { name: "Auditor", level: 1 }).waitFor();

      const ours = session.payment.recipient.toLowerCase();
      const ledger = page.getByRole("region", { name: "Every movement, oldest first" });
      const paymentRow = ledger.getByRole("row").filter({ has: page.locator(`code[title="${paymentHash}" i]`) });
      // The ledger's partner column: the partner owning the entry's payment address.
      const paymentRowPartner = () => paymentRow.locator(`span[title="${stack.local.partner.id}"]`).textContent();
      const reconciliation = page.getByRole("region", { name: "Per payment address, unreconciled first" });
      const ourRow = reconciliation.getByRole("row").filter({ has: page.locator(`code[title="${ours}" i]`) });
      const rivalRow = reconciliation.getByRole("row").filter({ has: page.locator(`code[title="${rivalAddress}" i]`) });
      // Test 2 left our address a unit short in the books: it comes first, with its partner named.
      await ourRow.getByText("unreconciled", { exact: true }).waitFor({ timeout: 30_000 });
      await rivalRow.getByText("reconciled", { exact: true }).waitFor();
      await expect(reconciliation.getByRole("row").nth(1).getAttribute("class")).resolves.toBe("unreconciled");
      // The partner column names each address's partner (its name from the partners list, and its id).
      const partners = await expectJson(await api(stack, "GET", "/api/admin/partners?limit=200", { token: adminToken }), 200);
      const demoName = partners.data.find((partner: { id: string }) => partner.id === stack.local.partner.id).name as string;
      await ourRow.locator(`span[title="${stack.local.partner.id}"]`).filter({ hasText: demoName }).waitFor();
      await rivalRow.locator(`span[title="${rivalId}"]`).filter({ hasText: "Rival shop" }).waitFor();
      await expect(paymentRowPartner()).resolves.toBe(demoName);
      await page
        .getByRole("alert")
        .filter({ hasText: `of ${demoName} (+1.00 USDC)` })
        .first()
        .waitFor();

      await paymentRow.waitFor();
      await expect(paymentRow.locator(".status").textContent()).resolves.toBe("settled");
      await capture(page, "admin-auditor");

      const ledgerCsv = await download(page, "Download ledger (CSV)");
      expect(ledgerCsv.name).toMatch(/^ledger-all-partners-.+\.csv$/);
      expect(ledgerCsv.text.startsWith(`${LEDGER_HEADER}\r\n`)).toBe(true);
      expect(ledgerCsv.text.toLowerCase()).toContain(paymentHash);
      const reconciliationCsv = await download(page, "Download reconciliation (CSV)");
      expect(reconciliationCsv.text.startsWith(`${RECONCILIATION_HEADER}\r\n`)).toBe(true);
      expect(reconciliationCsv.text).toContain(rivalId);
      expect(reconciliationCsv.text).toContain(stack.local.partner.id);
      const ordersCsv = await download(page, "Download orders (CSV)");
      expect(ordersCsv.text.startsWith(`${ORDERS_HEADER}\r\n`)).toBe(true);
      expect(ordersCsv.text).toContain(session.orderId);

      // One partner: the rival's books alone, in the tables and the downloads.
      await page.getByLabel("Partner", { exact: true }).selectOption(rivalId);
      await ourRow.waitFor({ state: "detached" });
      await rivalRow.waitFor();
      await page.getByText("Every payment address reconciles to the base unit.").waitFor();
      await paymentRow.waitFor({ state: "detached" });
      await ledger.getByText("No movement in this period.").waitFor();
      const rivalLedger = await download(page, "Download ledger (CSV)");
      expect(rivalLedger.name).toMatch(new RegExp(`^ledger-${rivalId}-.+\\.csv$`));
      expect(rivalLedger.text.toLowerCase()).not.toContain(paymentHash);
      await capture(page, "admin-auditor-one-partner");

      const origin = new URL(stack.local.baseUrl).origin;
      const foreign = requestedUrls
        .slice(seen)
        .filter((url) => !url.startsWith(origin) && !url.startsWith("blob:") && !url.startsWith("data:"));
      expect(foreign).toEqual([]);
      await page.close();
    });
  });
});

describe("console-gasless", () => {
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
    stack = sharedStack();
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
});

describe("rewards-console", () => {
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
    stack = sharedStack();
    chromium = await launchChromium("rewards-console", { width: 1280, height: 900 });
    context = chromium.context;
    context.on("request", (request) => requestedUrls.push(request.url()));
    await injectTestWallet(context, { chain: stack.chain, rpcUrl: stack.local.rpcUrl, key: () => walletKey });
  }, 420_000);

  afterAll(async () => {
    const foreign = requestedUrls.filter((url) => new URL(url).origin !== stack.local.baseUrl);
    expect(foreign).toEqual([]);
    await chromium?.close();
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
});
