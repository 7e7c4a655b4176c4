import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { type Address, erc20Abi, type Hex, isAddressEqual } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createClient, SettlementApiError } from "../client/src/index.js";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import {
  axeFindings,
  type Chromium,
  freshArtifacts,
  injectTestWallet,
  launchChromium,
  requireChromium,
} from "./support/browser.js";
import {
  accountWallet,
  adminWallet,
  api,
  expectJson,
  openOffering,
  portalWallet,
  registerIssuer,
  signIn,
} from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// An issuer refunds an RWA purchase (issue 26, SPEC 15, docs/refunds.md "Issuers") on a
// real Anvil: investors pay real test USDC, the refund is sent from the offering's
// settlement address (a local payment address: the test account sends it), and the
// service proves it from the index. A full refund gives the units back to the offering
// and revokes the certificate; a partial one keeps the units.
let stack: TestStack;
let store: Store;
let adminToken: string;
let issuerToken: string;
let issuerKey: Hex;
let issuerPartnerId: string;
let rivalToken: string;
let offeringId: string;
const investorTokens: Record<number, string> = {};

type Purchase = {
  id: string;
  status: string;
  units: number;
  reservation: string;
  payment: { recipient: Address; amount: string };
  onchainPurchaseId: string;
  amountRefunded: string;
  amountRefundPending: string;
  refundStatus: string;
  certificate: { status: string } | null;
};

type Refund = {
  id: string;
  status: string;
  orderId: string | null;
  amount: string;
  destination: string | null;
  instructions: { from: string; to: string; amount: string; uri: string; transaction: { data: string } } | null;
  transactionHash: string | null;
};

beforeAll(async () => {
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  adminToken = await signIn(stack, "admin", adminWallet(stack));
  const issuerWallet = portalWallet();
  issuerKey = issuerWallet.privateKey;
  const harbour = await registerIssuer(stack, adminToken, issuerWallet, "Harbour Capital");
  issuerToken = harbour.token;
  issuerPartnerId = harbour.issuer.partnerId;
  rivalToken = (await registerIssuer(stack, adminToken, portalWallet(), "Rival Estates")).token;
  offeringId = await openOffering(
    stack,
    { issuer: issuerToken, admin: adminToken },
    { unitPriceUsdc: "2000000", totalUnits: 50 },
  );
  for (const index of [1, 2, 3]) investorTokens[index] = await signIn(stack, "investor", accountWallet(stack, index));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

async function checkout(investor: number, units: number): Promise<Purchase> {
  return expectJson<Purchase>(
    await api(stack, "POST", "/api/rwa/checkout", { token: investorTokens[investor], json: { offeringId, units } }),
    201,
  );
}

async function readPurchase(investor: number, id: string): Promise<Purchase> {
  return expectJson<Purchase>(await api(stack, "GET", `/api/rwa/checkout/${id}`, { token: investorTokens[investor] }), 200);
}

/** Checkout, a real payment from the investor's wallet, and the settlement the index proves. */
async function settledPurchase(investor: number, units: number): Promise<Purchase> {
  const purchase = await checkout(investor, units);
  const paid = await stack.payUsdc({ from: investor, to: purchase.payment.recipient, amount: BigInt(purchase.payment.amount) });
  await expectJson(
    await api(stack, "POST", "/api/rwa/settlements/wallet", {
      token: investorTokens[investor],
      json: { purchaseId: purchase.id, transactionHash: paid.hash },
    }),
    200,
  );
  return waitFor(
    async () => {
      const read = await readPurchase(investor, purchase.id);
      return read.status === "settled" ? read : undefined;
    },
    { what: `purchase ${purchase.id} settled` },
  );
}

const unitsAvailable = async () =>
  (await expectJson<{ unitsAvailable: number }>(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200)).unitsAvailable;

/** The issuer's refund of a purchase; `token: null` asks anonymously. */
function refundPurchase(purchaseId: string, body: Record<string, unknown> = {}, token: string | null = issuerToken) {
  return api(stack, "POST", `/api/issuer/purchases/${purchaseId}/refunds`, {
    token: token ?? undefined,
    json: { reason: "requested_by_customer", idempotencyKey: `rf-${randomUUID()}`, ...body },
  });
}

const readRefund = async (id: string, token = issuerToken) =>
  expectJson<Refund>(await api(stack, "GET", `/api/issuer/refunds/${id}`, { token }), 200);

const refundIn = (id: string, status: string) =>
  waitFor(
    async () => {
      const read = await readRefund(id);
      return read.status === status ? read : undefined;
    },
    { what: `refund ${id} ${status}`, timeoutMs: 30_000 },
  );

/** The issuer's view of a purchase, from the offering's purchase list. */
async function issuerPurchaseRow(id: string): Promise<Purchase> {
  const list = await expectJson<{ data: Purchase[] }>(
    await api(stack, "GET", `/api/issuer/offerings/${offeringId}/purchases?limit=200`, { token: issuerToken }),
    200,
  );
  const row = list.data.find((candidate) => candidate.id === id);
  if (row === undefined) throw new Error(`purchase ${id} missing from the issuer's list`);
  return row;
}

async function expectProblem(response: Response, status: number, code: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(JSON.parse(text).code).toBe(code);
}

/** Every refund row, guard and refund event, the offering and the purchases: "nothing changed" is this, equal before and after. */
async function state() {
  const [refunds, allowances, events, offering, purchases] = await Promise.all([
    store.selectFrom("refund").selectAll().orderBy("id").execute(),
    store.selectFrom("refund_allowance").selectAll().orderBy("payment_key").execute(),
    store.selectFrom("event").select("id").where("type", "like", "refund.%").orderBy("id").execute(),
    store.selectFrom("offering").select(["units_available", "status"]).where("id", "=", offeringId).execute(),
    store.selectFrom("rwa_purchase").selectAll().orderBy("id").execute(),
  ]);
  return { refunds, allowances, events, offering, purchases };
}

const usdcBalance = (address: Address) =>
  stack.publicClient.readContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });

describe("an issuer refunds a whole purchase", () => {
  let purchase: Purchase;
  let refund: Refund;
  const investor = () => stack.local.accounts[1]?.address as Address;

  it("a settled purchase with a minted certificate holds its units", async () => {
    const before = await unitsAvailable();
    purchase = await settledPurchase(1, 3);
    expect(await unitsAvailable()).toBe(before - 3);
    const claim = await expectJson(
      await api(stack, "POST", `/api/rwa/certificates/${purchase.id}/claim`, { token: investorTokens[1] }),
      200,
    );
    const wallet = stack.wallet(1);
    const mint = await wallet.sendTransaction({
      to: claim.transaction.to,
      data: claim.transaction.data,
      chain: stack.chain,
      account: wallet.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash: mint });
    const tokenId = BigInt(purchase.onchainPurchaseId).toString();
    await waitFor(
      async () => {
        // 404 certificate_not_found until the index holds the mint.
        const response = await api(stack, "GET", `/api/rwa/verify/certificates/${tokenId}`);
        const verified = response.status === 200 ? await response.json() : undefined;
        return verified?.status === "valid" ? verified : undefined;
      },
      { what: "certificate minted and valid" },
    );
  });

  it("refuses another issuer (as missing), an investor, an anonymous caller and an unpaid purchase, changing nothing", async () => {
    const before = await state();
    await expectProblem(await refundPurchase(purchase.id, {}, rivalToken), 404, "not_found");
    await expectProblem(await refundPurchase(purchase.id, {}, investorTokens[1]), 403, "wrong_portal");
    await expectProblem(await refundPurchase(purchase.id, {}, null), 401, "unauthenticated");
    await expectProblem(await refundPurchase("pur_does_not_exist"), 404, "not_found");
    // The rival cannot list the purchase's refunds either.
    await expectProblem(
      await api(stack, "GET", `/api/issuer/purchases/${purchase.id}/refunds`, { token: rivalToken }),
      404,
      "not_found",
    );
    expect(await state()).toEqual(before);
    // An unpaid purchase has nothing to give back (its reservation is the only change: the checkout's).
    const unpaid = await checkout(3, 1);
    const withUnpaid = await state();
    await expectProblem(await refundPurchase(unpaid.id), 409, "purchase_not_paid");
    expect(await state()).toEqual(withUnpaid);
  });

  it("creates a ready refund to the investor's wallet, replays it, and refuses refunding more", async () => {
    const key = `rf-${randomUUID()}`;
    const response = await refundPurchase(purchase.id, { idempotencyKey: key, reason: "other", note: "deal cancelled" });
    refund = await expectJson<Refund>(response, 201);
    expect(refund.status).toBe("ready");
    expect(refund.amount).toBe(purchase.payment.amount);
    expect(isAddressEqual(refund.destination as Address, investor())).toBe(true);
    expect(isAddressEqual(refund.instructions?.from as Address, purchase.payment.recipient)).toBe(true);
    const replay = await expectJson<Refund>(
      await refundPurchase(purchase.id, { idempotencyKey: key, reason: "other", note: "deal cancelled" }),
      200,
    );
    expect(replay.id).toBe(refund.id);
    // The same key for another request is a conflict, not a second refund.
    await expectProblem(
      await refundPurchase(purchase.id, { idempotencyKey: key, reason: "duplicate" }),
      409,
      "idempotency_conflict",
    );
    const before = await state();
    await expectProblem(await refundPurchase(purchase.id, { amount: "1" }), 409, "refund_exceeds_remaining");
    expect(await state()).toEqual(before);
    // The issuer sees it on the purchase (in progress) and in the purchase's refunds; the rival reads nothing.
    const row = await issuerPurchaseRow(purchase.id);
    expect(row).toMatchObject({ refundStatus: "none", amountRefunded: "0", amountRefundPending: purchase.payment.amount });
    const listed = await expectJson<{ data: Refund[] }>(
      await api(stack, "GET", `/api/issuer/purchases/${purchase.id}/refunds`, { token: issuerToken }),
      200,
    );
    expect(listed.data.map((item) => item.id)).toEqual([refund.id]);
    await expectProblem(await api(stack, "GET", `/api/issuer/refunds/${refund.id}`, { token: rivalToken }), 404, "not_found");
    await expectProblem(
      await api(stack, "POST", `/api/issuer/refunds/${refund.id}/test-send`, { token: rivalToken }),
      404,
      "not_found",
    );
    // The investor's session does not open the issuer's refunds.
    await expectProblem(
      await api(stack, "GET", `/api/issuer/refunds/${refund.id}`, { token: investorTokens[1] }),
      403,
      "wrong_portal",
    );
    // The QR code of the transfer, for the settlement address's wallet.
    const qr = await api(stack, "GET", `/api/issuer/refunds/${refund.id}/qr`, { token: issuerToken });
    expect(qr.status).toBe(200);
    expect(qr.headers.get("content-type")).toContain("image/svg+xml");
  });

  it("sent with the test account, succeeds from the index: units back, refunded in full, certificate revoked", async () => {
    const balanceBefore = await usdcBalance(investor());
    const unitsBefore = await unitsAvailable();
    const sent = await expectJson<{ transactionHash: Hex }>(
      await api(stack, "POST", `/api/issuer/refunds/${refund.id}/test-send`, { token: issuerToken }),
      200,
    );
    const succeeded = await refundIn(refund.id, "succeeded");
    expect(succeeded.transactionHash).toBe(sent.transactionHash);
    expect(await usdcBalance(investor())).toBe(balanceBefore + BigInt(purchase.payment.amount));
    expect(await unitsAvailable()).toBe(unitsBefore + 3);
    const row = await issuerPurchaseRow(purchase.id);
    expect(row).toMatchObject({
      status: "settled",
      reservation: "released",
      refundStatus: "full",
      amountRefunded: purchase.payment.amount,
      amountRefundPending: "0",
    });
    expect(await readPurchase(1, purchase.id)).toMatchObject({ refundStatus: "full", reservation: "released" });
    const tokenId = BigInt(purchase.onchainPurchaseId).toString();
    const verified = await expectJson(await api(stack, "GET", `/api/rwa/verify/certificates/${tokenId}`), 200);
    expect(verified.status).toBe("revoked");
    // The investor no longer holds the units: the holder register leaves the purchase out.
    const holders = await expectJson<{ data: { investor: string }[] }>(
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders`, { token: issuerToken }),
      200,
    );
    expect(holders.data.some((holder) => isAddressEqual(holder.investor as Address, investor()))).toBe(false);
    // The purchases CSV says it too.
    const csv = await (
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/purchases.csv`, { token: issuerToken })
    ).text();
    const [header, ...lines] = csv.trim().split(/\r?\n/);
    expect(header?.split(",").slice(-2)).toEqual(["amountRefundedUsdc", "refundStatus"]);
    expect(
      lines
        .find((line) => line.startsWith(purchase.id))
        ?.split(",")
        .slice(-2),
    ).toEqual([purchase.payment.amount, "full"]);
    // Nothing remains to refund.
    await expectProblem(await refundPurchase(purchase.id), 409, "refund_exceeds_remaining");
  });
});

describe("a partial refund", () => {
  it("gives part of the money back and keeps the units", async () => {
    const purchase = await settledPurchase(2, 2);
    const unitsBefore = await unitsAvailable();
    const refund = await expectJson<Refund>(await refundPurchase(purchase.id, { amount: "1000000" }), 201);
    expect(refund.amount).toBe("1000000");
    await expectJson(await api(stack, "POST", `/api/issuer/refunds/${refund.id}/test-send`, { token: issuerToken }), 200);
    await refundIn(refund.id, "succeeded");
    const row = await issuerPurchaseRow(purchase.id);
    expect(row).toMatchObject({ refundStatus: "partial", amountRefunded: "1000000", reservation: "held" });
    expect(await unitsAvailable()).toBe(unitsBefore);
    const holders = await expectJson<{ data: { investor: string; units: number }[] }>(
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders`, { token: issuerToken }),
      200,
    );
    const holder = holders.data.find((item) =>
      isAddressEqual(item.investor as Address, stack.local.accounts[2]?.address as Address),
    );
    expect(holder?.units).toBe(2);
  });
});

// The client library's refund sending methods, against the same stack: the issuer's
// partner holds an API key like any partner, and its refunds are an RWA purchase's.
describe("client library: sending a refund", () => {
  let client: ReturnType<typeof createClient>;
  let purchase: Purchase;
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error("expected a refusal");
      },
      (error: unknown) => {
        if (!(error instanceof SettlementApiError)) throw error;
        return error;
      },
    );
  const succeeded = (id: string) =>
    waitFor(
      async () => {
        const read = await client.refunds.retrieve(id);
        return read.status === "succeeded" ? read : undefined;
      },
      { what: `refund ${id} succeeded`, timeoutMs: 30_000 },
    );

  beforeAll(async () => {
    const key = await expectJson<{ apiKey: string }>(
      await api(stack, "POST", `/api/admin/partners/${issuerPartnerId}/api-keys`, { token: adminToken }),
      201,
    );
    client = createClient({ apiKey: key.apiKey, network: "local", baseUrl: stack.local.baseUrl });
    purchase = await settledPurchase(2, 1);
  });

  it("qrSvg, authorizationRequest and relayAuthorization: the relayer sends the settlement address's signed refund", async () => {
    const refund = await expectJson<Refund>(await refundPurchase(purchase.id, { amount: "500000" }), 201);
    const svg = await client.refunds.qrSvg(refund.id);
    expect(svg).toContain("<svg");
    const request = await client.refunds.authorizationRequest(refund.id);
    expect(request.message.value).toBe("500000");
    expect(isAddressEqual(request.message.to as Address, stack.local.accounts[2]?.address as Address)).toBe(true);
    expect(isAddressEqual(request.message.from as Address, purchase.payment.recipient)).toBe(true);
    // The settlement address is a local payment address: its key is the stack's.
    const secrets = loadOrCreateLocalSecrets(stack.dataDir);
    const signer = secrets.paymentPrivateKeys
      .map((key) => privateKeyToAccount(key))
      .find((account) => isAddressEqual(account.address, purchase.payment.recipient));
    if (signer === undefined) throw new Error("the settlement address is not a local payment address");
    const { message } = request;
    const signature = await signer.signTypedData({
      domain: { ...request.domain, verifyingContract: request.domain.verifyingContract as Address },
      types: request.types,
      primaryType: "TransferWithAuthorization",
      message: {
        ...message,
        from: message.from as Address,
        to: message.to as Address,
        nonce: message.nonce as Hex,
        value: BigInt(message.value),
        validAfter: BigInt(message.validAfter),
        validBefore: BigInt(message.validBefore),
      },
    });
    const relayed = await client.refunds.relayAuthorization(refund.id, {
      authorization: message,
      signature,
      domain: { chainId: request.domain.chainId },
    });
    expect(relayed.refund.status).toBe("ready");
    const done = await succeeded(refund.id);
    expect(done.transactionHash).toBe(relayed.transactionHash);
    // A succeeded refund has nothing left to send nor to scan.
    expect((await refusal(client.refunds.qrSvg(refund.id))).code).toBe("refund_not_ready");
    expect((await refusal(client.refunds.authorizationRequest(refund.id))).code).toBe("refund_not_ready");
  });

  it("testSend sends with the test account; another partner's key finds nothing", async () => {
    const refund = await expectJson<Refund>(await refundPurchase(purchase.id, { amount: "500000" }), 201);
    const demo = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.local.baseUrl });
    expect((await refusal(demo.refunds.testSend(refund.id))).code).toBe("not_found");
    expect((await refusal(demo.refunds.qrSvg(refund.id))).code).toBe("not_found");
    const sent = await client.refunds.testSend(refund.id);
    expect(sent.refund.id).toBe(refund.id);
    const done = await succeeded(refund.id);
    expect(done.transactionHash).toBe(sent.transactionHash);
    expect((await refusal(client.refunds.testSend(refund.id))).code).toBe("refund_not_ready");
  });
});

// The console's issuer screen in headless Chromium at 1280 and 390 px: screenshots in
// test-artifacts/rwa-refunds/ (not committed), axe-core clean, every request to the
// service's origin. The issuer refunds a purchase in full from the offering's purchase
// list and sends it with the test account; the index completes it and the units return.
describe("the console: an issuer refunds a purchase (Chromium)", () => {
  const ARTIFACTS = freshArtifacts("rwa-refunds");
  let chromium: Chromium | undefined;
  let page: Page;
  const requestedUrls: string[] = [];

  async function capture(name: string) {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
      const blocking = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${width}.json`), { blockingOnly: true });
      expect(blocking, `${name} at ${width} px: accessibility violations`).toEqual([]);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  beforeAll(async () => {
    requireChromium();
    chromium = await launchChromium("rwa-refunds", { width: 1280, height: 900 });
    chromium.context.on("request", (request) => requestedUrls.push(request.url()));
    await injectTestWallet(chromium.context, { chain: stack.chain, rpcUrl: stack.local.rpcUrl, key: () => issuerKey });
  }, 120_000);
  afterAll(async () => {
    const foreign = requestedUrls.filter((url) => new URL(url).origin !== stack.local.baseUrl);
    expect(foreign).toEqual([]);
    await chromium?.close();
  });

  it("Refund… on a settled purchase, sent with the test account: the purchase shows full and the units come back", {
    timeout: 240_000,
  }, async () => {
    const purchase = await settledPurchase(3, 2);
    const unitsBefore = await unitsAvailable();
    page = await (chromium as Chromium).context.newPage();
    await page.goto(`${stack.local.baseUrl}/console`);
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    await page.getByRole("radio", { name: /^Issuer/ }).check();
    await page.getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await page.goto(`${stack.local.baseUrl}/console/issuer/offerings/${offeringId}`);
    await page.getByRole("heading", { name: "Harbour Logistics Note 2031", level: 1 }).waitFor();
    // A purchase refunded in full earlier offers no Refund… any more; this one does.
    await page.getByRole("button", { name: `Refund purchase ${purchase.id}` }).click();
    await page.getByRole("heading", { name: `Refund purchase ${purchase.id}` }).waitFor();
    await capture("01-issuer-refund-form");

    await page.getByRole("button", { name: "Create refund" }).click();
    const created = page.getByRole("status").filter({ hasText: "created: ready" });
    await created.waitFor();
    const refundId = (await created.locator("code").first().textContent()) as string;
    const refund = await readRefund(refundId);
    expect(refund).toMatchObject({ status: "ready", amount: purchase.payment.amount });
    // The send panel opens on the new refund, with the API's exact instructions and the QR code.
    await page.getByRole("heading", { name: `Send refund ${refundId}` }).waitFor();
    expect(await page.getByTestId("refund-calldata").textContent()).toBe(refund.instructions?.transaction.data);
    expect(await page.getByRole("link", { name: "payment link (EIP-681)" }).getAttribute("href")).toBe(refund.instructions?.uri);
    await page.getByRole("img", { name: "QR code of the refund's payment link" }).waitFor();
    await capture("02-issuer-refund-send");

    await page.getByRole("button", { name: "Send with the test account" }).click();
    const sent = page.getByRole("status").filter({ hasText: "Sent:" });
    await sent.waitFor({ timeout: 30_000 });
    const done = await refundIn(refundId, "succeeded");
    expect(await sent.locator("code").textContent()).toBe(done.transactionHash);
    await expect.poll(() => page.getByTestId("send-refund-status").textContent(), { timeout: 60_000 }).toBe("succeeded");
    const row = page
      .getByRole("row")
      .filter({ hasText: `${purchase.units}` })
      .filter({ has: page.locator(".status-full") });
    await row.first().waitFor({ timeout: 60_000 });
    expect(await unitsAvailable()).toBe(unitsBefore + 2);
    await page.getByText(`${unitsBefore + 2} of 50 available`).waitFor({ timeout: 60_000 });
    await expect.poll(async () => page.getByRole("button", { name: `Refund purchase ${purchase.id}` }).count()).toBe(0);
    await capture("03-issuer-refunded");
  });
});
