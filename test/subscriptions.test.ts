import { join } from "node:path";
import type { BrowserContext, Page, Request } from "playwright-core";
import { type Address, createWalletClient, erc20Abi, type Hex, http, parseSignature } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { subscriptionManagerAbi } from "../contracts/generated/SubscriptionManager.js";
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

// Subscriptions on one stack of the default configuration, a describe block per former file
// (subscription-pages, then subscriptions), each reading the stack through sharedStack(). The pages
// run first: subscriptions moves the chain's clock forward (evm_increaseTime) for good. Their
// customers are different accounts (4 and 3). One start, not 2.
let shared: TestStack;
const sharedStack = () => shared;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("subscription-pages", () => {
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
    stack = sharedStack();
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    const subscriber = privateKeyToAccount(keyOf(SUBSCRIBER));
    await stack.payUsdc({ from: 0, to: subscriber.address, amount: 20n * AMOUNT });
    // Signatures only: the customer's wallet holds no ETH at all.
    await stack.testClient.setBalance({ address: subscriber.address, value: 0n });
    await partner("/v1/members", {
      method: "POST",
      json: { address: privateKeyToAccount(keyOf(MEMBER)).address, role: "member" },
    });
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
});

describe("subscriptions", () => {
  // Subscriptions (issue 44, SPEC 18) on a real Anvil: the demo partner sells a daily plan, a test
  // account signs the terms and the permit, the relayer registers them, and the worker charges
  // each period by the chain's clock, which the tests move with `evm_increaseTime`.
  let stack: TestStack;
  let store: Store;
  let otherPartnerKey: string;
  let readOnlyKey: string;
  const SUBSCRIBER = 3;
  const AMOUNT = 2_000_000n;
  const DAY = 86_400;

  type SubscriptionBody = {
    id: string;
    status: string;
    url: string | null;
    customerUrl: string | null;
    clientToken: string | null;
    payee: string;
    amount: string;
    onchainId: string | null;
    nextChargeAt: string | null;
    cancelledBy: string | null;
    charges: {
      id: string;
      periodIndex: number;
      status: string;
      orderId: string | null;
      transactionHash: string | null;
      failureReason: string | null;
      nextRetryAt: string | null;
      attempts: number;
    }[];
  };

  beforeAll(async () => {
    stack = sharedStack();
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    const other = await createPartner(store, { name: "Other shop" });
    otherPartnerKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
    readOnlyKey = (await issueApiKey(store, { partnerId: stack.local.partner.id, mode: "test", scope: "read" })).apiKey;
    await stack.payUsdc({ from: 0, to: subscriber().address, amount: 100n * AMOUNT });
  });
  afterAll(async () => {
    await store?.destroy();
  });

  const subscriber = (index = SUBSCRIBER) => privateKeyToAccount(stack.local.accounts[index]?.privateKey as Hex);
  const withKey = (apiKey: string) => ({ Authorization: `Bearer ${apiKey}` });
  let keyCounter = 0;

  async function create(body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    return stack.partnerFetch("/v1/subscriptions", {
      method: "POST",
      headers,
      json: {
        externalCustomerId: "cus_1",
        productName: "Daily plan",
        amount: AMOUNT.toString(),
        interval: "day",
        idempotencyKey: `sub-${Date.now()}-${keyCounter++}`,
        ...body,
      },
    });
  }

  async function json<body>(response: Response, status: number): Promise<body> {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    return JSON.parse(text) as body;
  }

  async function expectProblem(response: Response, status: number, code: string) {
    const body = await json<{ code: string }>(response, status);
    expect(body.code).toBe(code);
  }

  const publicPost = (path: string, body: unknown) =>
    fetch(`${stack.ponder.baseUrl}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });

  type TermsAnswer = {
    terms: Record<string, string | number>;
    typedData: {
      domain: Record<string, unknown>;
      types: Record<string, unknown>;
      primaryType: string;
      message: Record<string, unknown>;
    };
    onchainId: Hex;
    permit: { value: string; deadline: string; typedData: TermsAnswer["typedData"] };
  };

  const readSubscription = async (id: string) => json<SubscriptionBody>(await stack.partnerFetch(`/v1/subscriptions/${id}`), 200);
  const subscriptionIn = (id: string, check: (subscription: SubscriptionBody) => boolean, what: string) =>
    waitFor(
      async () => {
        const subscription = await readSubscription(id);
        return check(subscription) ? subscription : undefined;
      },
      { what },
    );

  /** viem wants the typed data's numbers as bigints; the service sends them as JSON strings. */
  function signable(typedData: TermsAnswer["typedData"]) {
    const message = Object.fromEntries(
      Object.entries(typedData.message).map(([key, value]) => [
        key,
        typeof value === "string" && /^\d+$/.test(value) ? BigInt(value) : value,
      ]),
    );
    const domain = { ...typedData.domain, chainId: Number(typedData.domain.chainId) };
    // biome-ignore lint/suspicious/noExplicitAny: the typed data's shape is the service's answer
    return { ...typedData, domain, message } as any;
  }

  async function authorizeWithPermit(created: SubscriptionBody, index = SUBSCRIBER) {
    const account = subscriber(index);
    const terms = await json<TermsAnswer>(
      await publicPost(`/v1/public/subscriptions/${created.id}/terms`, {
        clientToken: created.clientToken,
        subscriber: account.address,
      }),
      200,
    );
    const signature = await account.signTypedData(signable(terms.typedData));
    const permit = parseSignature(await account.signTypedData(signable(terms.permit.typedData)));
    const sent = await json<{ transactionHash: Hex }>(
      await publicPost(`/v1/public/subscriptions/${created.id}/authorize`, {
        clientToken: created.clientToken,
        signature,
        permit: { deadline: terms.permit.deadline, v: Number(permit.v), r: permit.r, s: permit.s },
      }),
      200,
    );
    return { terms, signature, transactionHash: sent.transactionHash };
  }

  describe("subscriptions: create, authorise, charge, renew, cancel", () => {
    let created: SubscriptionBody;
    let terms: TermsAnswer;

    it("creates one awaiting the customer; a replay answers the same subscription", async () => {
      const key = "sub-replayed";
      created = await json<SubscriptionBody>(await create({ idempotencyKey: key }), 201);
      expect(created).toMatchObject({ status: "awaiting_authorization", amount: AMOUNT.toString() });
      expect(created.id).toMatch(/^sub_/);
      expect(created.url).toBe(`${stack.ponder.baseUrl}/subscribe/${created.id}#st=${created.clientToken}`);
      expect(created.payee.toLowerCase()).toBe(stack.local.partner.paymentAddress.toLowerCase());
      const replay = await json<SubscriptionBody>(await create({ idempotencyKey: key }), 200);
      expect(replay.id).toBe(created.id);
      // Only the token's hash is kept: the replay's new token is the one that works now.
      created = replay;
    });

    it("refuses a wrong client token", async () => {
      await expectProblem(
        await publicPost(`/v1/public/subscriptions/${created.id}/terms`, {
          clientToken: "st_wrong",
          subscriber: subscriber().address,
        }),
        401,
        "invalid_subscription_token",
      );
    });

    it("refuses terms signed for another payee or a tampered amount, and sends nothing", async () => {
      terms = await json<TermsAnswer>(
        await publicPost(`/v1/public/subscriptions/${created.id}/terms`, {
          clientToken: created.clientToken,
          subscriber: subscriber().address,
        }),
        200,
      );
      expect(terms.permit.value).toBe((12n * AMOUNT).toString());
      for (const tampered of [
        { payee: subscriber().address },
        { amount: 1n },
        { subscriber: privateKeyToAccount(stack.local.accounts[4]?.privateKey as Hex).address },
      ]) {
        const typedData = signable(terms.typedData);
        const signature = await subscriber().signTypedData({ ...typedData, message: { ...typedData.message, ...tampered } });
        await expectProblem(
          await publicPost(`/v1/public/subscriptions/${created.id}/authorize`, { clientToken: created.clientToken, signature }),
          422,
          "subscription_bad_signature",
        );
      }
      expect((await readSubscription(created.id)).status).toBe("awaiting_authorization");
    });

    it("another partner's key neither reads, lists nor cancels it; a read-only key creates or cancels nothing", async () => {
      await expectProblem(
        await stack.partnerFetch(`/v1/subscriptions/${created.id}`, { headers: withKey(otherPartnerKey) }),
        404,
        "not_found",
      );
      const list = await json<{ data: { id: string }[] }>(
        await stack.partnerFetch("/v1/subscriptions", { headers: withKey(otherPartnerKey) }),
        200,
      );
      expect(list.data.map((item) => item.id)).not.toContain(created.id);
      await expectProblem(
        await stack.partnerFetch(`/v1/subscriptions/${created.id}/cancel`, {
          method: "POST",
          headers: withKey(otherPartnerKey),
          json: {},
        }),
        404,
        "not_found",
      );
      await expectProblem(await create({}, withKey(readOnlyKey)), 403, "read_only_key");
      await expectProblem(
        await stack.partnerFetch(`/v1/subscriptions/${created.id}/cancel`, {
          method: "POST",
          headers: withKey(readOnlyKey),
          json: {},
        }),
        403,
        "read_only_key",
      );
      const own = await json<{ data: { id: string }[] }>(await stack.partnerFetch("/v1/subscriptions"), 200);
      expect(own.data.map((item) => item.id)).toContain(created.id);
    });

    it("authorised with a signature and a permit, it turns active and its first period is charged and paid", async () => {
      const { transactionHash } = await authorizeWithPermit(created);
      await stack.publicClient.waitForTransactionReceipt({ hash: transactionHash, pollingInterval: 50 });
      const paid = await subscriptionIn(
        created.id,
        (subscription) => subscription.status === "active" && subscription.charges.some((charge) => charge.status === "paid"),
        "first charge paid",
      );
      const first = paid.charges[0]!;
      expect(first).toMatchObject({ periodIndex: 0, status: "paid" });
      expect(first.orderId).toMatch(/^ord_/);
      const events = await outboxEvents(stack, store);
      const ofIt = events.filter((event) => event.data.subscriptionId === created.id).map((event) => event.type);
      expect(ofIt).toEqual(["subscription.activated", "subscription.charged"]);
      const charged = events.find((event) => event.type === "subscription.charged" && event.data.subscriptionId === created.id);
      expect(charged?.data).toMatchObject({
        chargeId: first.id,
        orderId: first.orderId,
        periodIndex: 0,
        amount: AMOUNT.toString(),
      });
    });

    it("renews when the chain's clock passes the period, charging the next one once", async () => {
      await stack.testClient.increaseTime({ seconds: DAY });
      await stack.testClient.mine({ blocks: 1 });
      const renewed = await subscriptionIn(
        created.id,
        (subscription) => subscription.charges.filter((charge) => charge.status === "paid").length === 2,
        "second charge paid",
      );
      expect(renewed.charges.map((charge) => charge.periodIndex)).toEqual([0, 1]);
      // A charge is no unresolved payment: once the settlement worker has read past both charges'
      // blocks, neither transfer is in the partner's queue, and no payment.unresolved was sent.
      const chargeHashes = renewed.charges.map((charge) => (charge.transactionHash as string).toLowerCase());
      const lastBlock = (await stack.publicClient.getTransactionReceipt({ hash: chargeHashes.at(-1) as Hex })).blockNumber;
      await waitFor(
        async () => {
          const cursor = await store
            .selectFrom("worker_cursor")
            .select("value")
            .where("name", "=", `settlement:transfers:${stack.local.chainId}`)
            .executeTakeFirst();
          return cursor !== undefined && BigInt(cursor.value) >= lastBlock ? true : undefined;
        },
        { timeoutMs: 45_000, what: "the settlement worker past the charges' blocks" },
      );
      const unresolved = await json<{ data: { transactionHash: string }[] }>(
        await stack.partnerFetch("/v1/payments?status=unresolved&limit=500"),
        200,
      );
      expect(unresolved.data.filter((payment) => chargeHashes.includes(payment.transactionHash.toLowerCase()))).toEqual([]);
      const events = await outboxEvents(stack, store);
      expect(
        events.filter(
          (event) =>
            event.type === "payment.unresolved" && chargeHashes.includes(String(event.data.transactionHash).toLowerCase()),
        ),
      ).toEqual([]);
      // The contract refuses a second charge in the same period; the worker never sent one.
      const manager = stack.local.contracts.subscriptionManager as Address;
      await expect(
        stack.publicClient.simulateContract({
          address: manager,
          abi: subscriptionManagerAbi,
          functionName: "charge",
          args: [terms.onchainId],
          account: stack.local.accounts[0]?.address as Address,
        }),
      ).rejects.toThrow(/AlreadyCharged/);
    });

    it("each paid charge is an ordinary order with its payment, filed as subscription_charge; the books still reconcile", async () => {
      const paid = (await readSubscription(created.id)).charges.filter((charge) => charge.status === "paid");
      expect(paid).toHaveLength(2);
      for (const charge of paid) {
        const order = await json<{
          status: string;
          externalOrderId: string;
          amountPaid: string | null;
          payment: { transactionHash: string; from: string; to: string } | null;
        }>(await stack.partnerFetch(`/v1/orders/${charge.orderId}`), 200);
        expect(order).toMatchObject({
          status: "paid",
          externalOrderId: `${created.id}:${charge.periodIndex}`,
          amountPaid: AMOUNT.toString(),
        });
        expect(order.payment?.transactionHash.toLowerCase()).toBe(charge.transactionHash?.toLowerCase());
        expect(order.payment?.from.toLowerCase()).toBe(subscriber().address.toLowerCase());
        expect(order.payment?.to.toLowerCase()).toBe(stack.local.partner.paymentAddress.toLowerCase());
      }
      const hashes = paid.map((charge) => (charge.transactionHash as string).toLowerCase());
      const toBlock = await stack.publicClient.getBlockNumber();
      const range = `fromBlock=1&toBlock=${toBlock}`;
      const ledger = await json<{ data: { kind: string; transactionHash: string; orderId?: string; value: string }[] }>(
        await stack.partnerFetch(`/v1/ledger?${range}&limit=500`),
        200,
      );
      const charges = ledger.data.filter((entry) => hashes.includes(entry.transactionHash.toLowerCase()));
      expect(charges.map((entry) => [entry.kind, entry.orderId, entry.value])).toEqual(
        paid.map((charge) => ["subscription_charge", charge.orderId, AMOUNT.toString()]),
      );
      const report = await json<{
        data: { paymentAddress: string; reconciled: boolean; chainBalance: string; sums: Record<string, string> }[];
      }>(await stack.partnerFetch(`/v1/reports/reconciliation?${range}`), 200);
      const row = report.data.find(
        (line) => line.paymentAddress.toLowerCase() === stack.local.partner.paymentAddress.toLowerCase(),
      );
      const balance = await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [stack.local.partner.paymentAddress as Address],
        blockNumber: toBlock,
      });
      expect(row).toMatchObject({ reconciled: true, chainBalance: balance.toString() });
      const ledgerSum = ledger.data
        .filter(
          (entry) =>
            entry.kind === "subscription_charge" &&
            (entry as { paymentAddress?: string }).paymentAddress?.toLowerCase() ===
              stack.local.partner.paymentAddress.toLowerCase(),
        )
        .reduce((total, entry) => total + BigInt(entry.value), 0n);
      expect(BigInt(row?.sums.subscription_charge ?? "0")).toBe(ledgerSum);
      expect(ledgerSum).toBeGreaterThanOrEqual(2n * AMOUNT);
    });

    it("the customer cancels on chain: cancelled by the customer, and charging stops", async () => {
      const wallet = stack.wallet(SUBSCRIBER);
      const hash = await wallet.writeContract({
        address: stack.local.contracts.subscriptionManager as Address,
        abi: subscriptionManagerAbi,
        functionName: "cancel",
        args: [terms.onchainId],
        chain: stack.chain,
        account: wallet.account!,
      });
      await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      const cancelled = await subscriptionIn(created.id, (subscription) => subscription.status === "cancelled", "cancelled");
      expect(cancelled.cancelledBy).toBe("customer");
      await stack.testClient.increaseTime({ seconds: DAY });
      await stack.testClient.mine({ blocks: 1 });
      const events = await outboxEvents(stack, store);
      expect(events.filter((event) => event.data.subscriptionId === created.id).map((event) => event.type)).toContain(
        "subscription.cancelled",
      );
      expect((await readSubscription(created.id)).charges).toHaveLength(2);
      // Nobody can charge it any more: the contract refuses a charge after the cancel.
      await expect(
        stack.publicClient.simulateContract({
          address: stack.local.contracts.subscriptionManager as Address,
          abi: subscriptionManagerAbi,
          functionName: "charge",
          args: [terms.onchainId],
          account: stack.local.accounts[0]?.address as Address,
        }),
      ).rejects.toThrow(/SubscriptionCancelled/);
    });
  });

  describe("subscriptions: the partner cancels off chain", () => {
    it("an awaiting subscription is cancelled by the partner; a second cancel answers the same", async () => {
      const created = await json<SubscriptionBody>(await create(), 201);
      const cancelled = await json<SubscriptionBody>(
        await stack.partnerFetch(`/v1/subscriptions/${created.id}/cancel`, { method: "POST", json: {} }),
        200,
      );
      expect(cancelled).toMatchObject({ status: "cancelled", cancelledBy: "partner" });
      const again = await json<SubscriptionBody>(
        await stack.partnerFetch(`/v1/subscriptions/${created.id}/cancel`, { method: "POST", json: {} }),
        200,
      );
      expect(again.status).toBe("cancelled");
      await expectProblem(
        await publicPost(`/v1/public/subscriptions/${created.id}/terms`, {
          clientToken: created.clientToken,
          subscriber: subscriber().address,
        }),
        409,
        "subscription_not_awaiting_authorization",
      );
    });
  });

  /** Moves the chain's clock (the worker's clock) and mines a block stamped with it. */
  async function advanceChain(seconds: number) {
    await stack.testClient.increaseTime({ seconds });
    await stack.testClient.mine({ blocks: 1 });
  }

  /** Sends the wallet's whole USDC balance to account 0: its next charges cannot be paid. */
  async function emptyWallet(index: number) {
    const balance = await usdcBalance(subscriber(index).address);
    if (balance > 0n) await stack.payUsdc({ from: index, to: stack.local.accounts[0]?.address as Address, amount: balance });
  }

  const usdcBalance = (address: Address) =>
    stack.publicClient.readContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [address],
    });

  const eventsOf = async (subscriptionId: string) =>
    (await outboxEvents(stack, store)).filter((event) => event.data.subscriptionId === subscriptionId);

  /** A new subscription authorised by account `index`, its first period charged and paid. */
  async function activeSubscription(index: number, body: Record<string, unknown> = {}) {
    const created = await json<SubscriptionBody>(await create({ externalCustomerId: `cus_${index}`, ...body }), 201);
    const { terms, transactionHash } = await authorizeWithPermit(created, index);
    await stack.publicClient.waitForTransactionReceipt({ hash: transactionHash, pollingInterval: 50 });
    await subscriptionIn(created.id, (subscription) => subscription.charges[0]?.status === "paid", "first charge paid");
    return { created, terms };
  }

  const chargeOf = (
    id: string,
    periodIndex: number,
    check: (charge: SubscriptionBody["charges"][number]) => boolean,
    what: string,
  ) =>
    subscriptionIn(
      id,
      (subscription) => {
        const charge = subscription.charges.find((candidate) => candidate.periodIndex === periodIndex);
        return charge !== undefined && check(charge);
      },
      what,
    );

  describe("subscriptions: a charge the chain did not take", () => {
    const INDEX = 5;

    beforeAll(async () => {
      await stack.payUsdc({ from: 0, to: subscriber(INDEX).address, amount: 20n * AMOUNT });
    });

    it("a charge that reverts fails (reverted), the subscription is past due, retries by the chain's clock and recovers", async () => {
      const { created } = await activeSubscription(INDEX);
      const payee = stack.local.accounts[0]?.address as Address;
      await stack.testClient.setAutomine(false);
      try {
        await advanceChain(DAY);
        await chargeOf(created.id, 1, (charge) => charge.status === "pending", "second charge sent");
        // The customer empties the wallet in the same block, ahead of the charge (a higher tip is mined
        // first). Signed here with its gas given: an estimate would run after the pending charge and fail.
        const customer = createWalletClient({
          account: subscriber(INDEX),
          chain: stack.chain,
          transport: http(stack.local.rpcUrl),
        });
        await customer.writeContract({
          address: stack.local.contracts.usdc as Address,
          abi: erc20Abi,
          functionName: "transfer",
          args: [payee, await usdcBalance(subscriber(INDEX).address)],
          chain: stack.chain,
          gas: 100_000n,
          nonce: await stack.publicClient.getTransactionCount({ address: subscriber(INDEX).address }),
          maxPriorityFeePerGas: 50_000_000_000n,
          maxFeePerGas: 100_000_000_000n,
        });
        await stack.testClient.mine({ blocks: 1 });
      } finally {
        await stack.testClient.setAutomine(true);
      }
      const failed = await chargeOf(created.id, 1, (charge) => charge.status === "failed", "second charge failed");
      const charge = failed.charges.find((candidate) => candidate.periodIndex === 1)!;
      expect(charge).toMatchObject({ failureReason: "reverted", attempts: 1 });
      expect(failed.status).toBe("past_due");
      const block = await stack.publicClient.getBlock({ blockTag: "latest" });
      expect(Date.parse(charge.nextRetryAt as string)).toBe((Number(block.timestamp) + 3_600) * 1000);
      const types = (await eventsOf(created.id)).map((event) => event.type);
      expect(types.slice(-2)).toEqual(["subscription.charge_failed", "subscription.past_due"]);

      // The first retry, an hour later by the chain's clock: still no money, refused before sending.
      await advanceChain(1_800);
      expect((await readSubscription(created.id)).charges.find((c) => c.periodIndex === 1)?.attempts).toBe(1);
      await advanceChain(1_800);
      const refused = await chargeOf(
        created.id,
        1,
        (candidate) => candidate.status === "failed" && candidate.attempts === 2,
        "the first retry refused",
      );
      expect(refused.charges.find((c) => c.periodIndex === 1)).toMatchObject({ failureReason: "insufficient_balance" });
      const failures = (await eventsOf(created.id)).filter((event) => event.type === "subscription.charge_failed");
      expect(failures.at(-1)?.data).toMatchObject({ failureReason: "insufficient_balance", periodIndex: 1 });

      // Money back; the second retry (6 h later) is paid and the subscription is active again.
      await stack.payUsdc({ from: 0, to: subscriber(INDEX).address, amount: 5n * AMOUNT });
      await advanceChain(6 * 3_600);
      const recovered = await chargeOf(created.id, 1, (candidate) => candidate.status === "paid", "the second retry paid");
      expect(recovered.status).toBe("active");
      expect((await eventsOf(created.id)).map((event) => event.type).at(-1)).toBe("subscription.charged");
      await stack.partnerFetch(`/v1/subscriptions/${created.id}/cancel`, { method: "POST", json: {} });
    }, 120_000);
  });

  describe("subscriptions: retries run out, and terms end", () => {
    it("after the last retry the subscription is cancelled with retries_exhausted", async () => {
      const INDEX = 6;
      await stack.payUsdc({ from: 0, to: subscriber(INDEX).address, amount: 2n * AMOUNT });
      const { created } = await activeSubscription(INDEX, { interval: "week" });
      await emptyWallet(INDEX);
      await advanceChain(7 * DAY);
      const delays = [3_600, 6 * 3_600, 24 * 3_600, 72 * 3_600];
      for (const [attempt, delay] of delays.entries()) {
        await chargeOf(
          created.id,
          1,
          (charge) => charge.status === "failed" && charge.attempts === attempt + 1,
          `attempt ${attempt + 1} failed`,
        );
        await advanceChain(delay);
      }
      const cancelled = await subscriptionIn(created.id, (subscription) => subscription.status === "cancelled", "cancelled");
      expect(cancelled.cancelledBy).toBe("retries_exhausted");
      expect(cancelled.charges.find((charge) => charge.periodIndex === 1)).toMatchObject({
        status: "failed",
        attempts: 5,
        nextRetryAt: null,
      });
      const events = await eventsOf(created.id);
      expect(events.filter((event) => event.type === "subscription.charge_failed")).toHaveLength(5);
      expect(events.filter((event) => event.type === "subscription.past_due")).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: "subscription.cancelled", data: { cancelledBy: "retries_exhausted" } });
    }, 120_000);

    it("ends when the chain's clock reaches the terms' end, with subscription.ended, and charges nothing after", async () => {
      const INDEX = 7;
      await stack.payUsdc({ from: 0, to: subscriber(INDEX).address, amount: 10n * AMOUNT });
      const now = Number((await stack.publicClient.getBlock({ blockTag: "latest" })).timestamp);
      const { created, terms } = await activeSubscription(INDEX, {
        endAt: new Date((now + DAY + DAY / 2) * 1000).toISOString(),
      });
      await advanceChain(DAY);
      await chargeOf(created.id, 1, (charge) => charge.status === "paid", "second charge paid");
      await advanceChain(DAY);
      const ended = await subscriptionIn(created.id, (subscription) => subscription.status === "ended", "ended");
      expect(ended.charges).toHaveLength(2);
      expect(ended.nextChargeAt).toBeNull();
      expect((await eventsOf(created.id)).map((event) => event.type).at(-1)).toBe("subscription.ended");
      // Nobody can charge it after `end`: the contract refuses.
      await expect(
        stack.publicClient.simulateContract({
          address: stack.local.contracts.subscriptionManager as Address,
          abi: subscriptionManagerAbi,
          functionName: "charge",
          args: [terms.onchainId],
          account: stack.local.accounts[0]?.address as Address,
        }),
      ).rejects.toThrow(/SubscriptionEnded|TermsEnded/);
    });
  });

  describe("subscriptions: the partner's retry schedule", () => {
    const DEFAULT = [3_600, 21_600, 86_400, 259_200];
    const settings = (init: RequestInit & { json?: unknown } = {}) => stack.partnerFetch("/v1/subscriptions/settings", init);

    it("refuses a read-only key and a schedule out of bounds, and changes nothing", async () => {
      expect(await json<{ retryDelaysSeconds: number[] }>(await settings(), 200)).toEqual({ retryDelaysSeconds: DEFAULT });
      await expectProblem(
        await settings({ method: "PUT", headers: withKey(readOnlyKey), json: { retryDelaysSeconds: [600] } }),
        403,
        "read_only_key",
      );
      for (const retryDelaysSeconds of [[30], [600.5], Array.from({ length: 9 }, () => 600), [31 * DAY]]) {
        await expectProblem(await settings({ method: "PUT", json: { retryDelaysSeconds } }), 400, "invalid_request");
      }
      await expectProblem(
        await settings({ method: "PUT", headers: withKey(otherPartnerKey), json: { retryDelaysSeconds: "600" } }),
        400,
        "invalid_request",
      );
      expect(await json<{ retryDelaysSeconds: number[] }>(await settings(), 200)).toEqual({ retryDelaysSeconds: DEFAULT });
    });

    it("a failed charge is retried on the partner's own schedule, and cancelled after its last retry", async () => {
      const INDEX = 8;
      expect(
        await json<{ retryDelaysSeconds: number[] }>(await settings({ method: "PUT", json: { retryDelaysSeconds: [600] } }), 200),
      ).toEqual({ retryDelaysSeconds: [600] });
      // Another partner's schedule is its own.
      expect(await json<{ retryDelaysSeconds: number[] }>(await settings({ headers: withKey(otherPartnerKey) }), 200)).toEqual({
        retryDelaysSeconds: DEFAULT,
      });
      try {
        await stack.payUsdc({ from: 0, to: subscriber(INDEX).address, amount: 2n * AMOUNT });
        const { created } = await activeSubscription(INDEX);
        await emptyWallet(INDEX);
        await advanceChain(DAY);
        const failed = await chargeOf(created.id, 1, (charge) => charge.status === "failed", "second charge failed");
        const block = await stack.publicClient.getBlock({ blockTag: "latest" });
        expect(Date.parse(failed.charges.find((charge) => charge.periodIndex === 1)?.nextRetryAt as string)).toBe(
          (Number(block.timestamp) + 600) * 1000,
        );
        await advanceChain(600);
        const cancelled = await subscriptionIn(created.id, (subscription) => subscription.status === "cancelled", "cancelled");
        expect(cancelled.cancelledBy).toBe("retries_exhausted");
        expect(cancelled.charges.find((charge) => charge.periodIndex === 1)).toMatchObject({ attempts: 2, nextRetryAt: null });
      } finally {
        await settings({ method: "PUT", json: { retryDelaysSeconds: DEFAULT } });
      }
    });
  });
});
