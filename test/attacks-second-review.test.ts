import { join } from "node:path";
import { type Address, erc20Abi, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSession, outboxEvents } from "./support/checkout-helpers.js";
import { accountWallet, adminWallet, api, expectJson, openOffering, registerIssuer, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The second attack review (issue 24): each finding is performed against one real
// stack. Reservations last 8 s and go back on sale as soon as the index passed the
// expiry, so a "late payment for a released reservation" takes seconds to stage.
const RESERVATION_SECONDS = 8;
const SIGN_IN_LIMIT = 30;
const PUBLIC_LIMIT = 100;

let stack: TestStack;
let store: Store;
let adminToken: string;
let issuerToken: string;
let issuerPartnerKey: string;

beforeAll(async () => {
  stack = await startTestStack({
    env: {
      RWA_RESERVATION_SECONDS: String(RESERVATION_SECONDS),
      RWA_RELEASE_GRACE_SECONDS: "0",
      // Rate-limit attacks below each come from their own X-Forwarded-For address.
      TRUST_PROXY: "true",
      SIGN_IN_RATE_LIMIT: String(SIGN_IN_LIMIT),
      PUBLIC_RATE_LIMIT: String(PUBLIC_LIMIT),
    },
  });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  adminToken = await signIn(stack, "admin", adminWallet(stack));
  const registered = await registerIssuer(stack, adminToken, accountWallet(stack, 8), "Harbour Capital");
  issuerToken = registered.token;
  issuerPartnerKey = (await issueApiKey(store, { partnerId: registered.issuer.partnerId, mode: "test" })).apiKey;
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

async function expectProblem(response: Response, status: number, code: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  const problem = JSON.parse(text);
  expect(problem.code, text).toBe(code);
  return problem;
}

type Purchase = { id: string; status: string; reservation: string; payment: { recipient: Address; amount: string } };
type UnresolvedPayment = { transactionHash: string; logIndex: number; reason: string; orderId: string | null };

const investorTokens = new Map<number, string>();
async function investorToken(account: number) {
  if (!investorTokens.has(account)) investorTokens.set(account, await signIn(stack, "investor", accountWallet(stack, account)));
  return investorTokens.get(account) as string;
}
const buy = async (account: number, offeringId: string, units: number) =>
  expectJson<Purchase>(
    await api(stack, "POST", "/api/rwa/checkout", { token: await investorToken(account), json: { offeringId, units } }),
    201,
  );
const readPurchase = async (account: number, id: string) =>
  expectJson<Purchase>(await api(stack, "GET", `/api/rwa/checkout/${id}`, { token: await investorToken(account) }), 200);
const unitsAvailable = async (offeringId: string): Promise<number> =>
  (await expectJson(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200)).unitsAvailable;
const heldUnits = async (offeringId: string): Promise<number> => {
  const holders = await expectJson(
    await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders`, { token: issuerToken }),
    200,
  );
  return holders.data.reduce((sum: number, holder: { units: number }) => sum + holder.units, 0);
};
const asIssuerPartner = (path: string, json?: unknown) =>
  stack.partnerFetch(path, {
    method: json === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${issuerPartnerKey}` },
    json,
  });

/** The issuer partner's unresolved payment of this transaction, once the settlement worker recorded it. */
async function unresolved(hash: string): Promise<UnresolvedPayment> {
  return waitFor(
    async () => {
      const list = await expectJson(await asIssuerPartner("/v1/payments?status=unresolved&limit=500"), 200);
      return list.data.find((row: UnresolvedPayment) => row.transactionHash === hash.toLowerCase());
    },
    { what: `unresolved payment ${hash}` },
  );
}
const paymentPath = (payment: UnresolvedPayment) => `${stack.local.chainId}/${payment.transactionHash}/${payment.logIndex}`;
const adminAttach = (payment: UnresolvedPayment, orderId: string) =>
  api(stack, "POST", `/api/admin/payments/${paymentPath(payment)}/attach`, { token: adminToken, json: { orderId } });
const partnerAttach = (payment: UnresolvedPayment, orderId: string) =>
  asIssuerPartner(`/v1/payments/${paymentPath(payment)}/attach`, { orderId });

/** Waits out the reservations, then mines a block so the index is past their expiry and they are released. */
async function reservationsReleased(purchases: { account: number; id: string }[]) {
  await new Promise((resolve) => setTimeout(resolve, RESERVATION_SECONDS * 1000 + 1500));
  await stack.testClient.mine({ blocks: 1 });
  for (const { account, id } of purchases) {
    await waitFor(async () => ((await readPurchase(account, id)).reservation === "released" ? true : undefined), {
      what: `purchase ${id} released`,
    }).catch(async (error: Error) => {
      // Seen once in four full runs (a purchase never released, the index past its expiry):
      // what the release rule reads, so that a next occurrence names its cause.
      const purchase = await store.selectFrom("rwa_purchase").selectAll().where("id", "=", id).executeTakeFirst();
      const session = await store
        .selectFrom("checkout_session")
        .selectAll()
        .where("id", "=", purchase?.session_id ?? "")
        .executeTakeFirst();
      const health = await (await fetch(`${stack.ponder.baseUrl}/v1/health`)).text();
      error.message += `\nnow ${Date.now()}\npurchase ${JSON.stringify(purchase)}\nsession ${JSON.stringify(session)}\nhealth ${health}`;
      throw error;
    });
  }
}

describe("finding 1 and 2: attaching a payment to an RWA purchase is judged as a fresh purchase", () => {
  it("refuses a late payment once its released units were sold (2 offered never become 4 held), re-reserves them when free, and refuses a stranger's transfer and a frozen investor", {
    timeout: 120_000,
  }, async () => {
    const tokens = { issuer: issuerToken, admin: adminToken };
    const soldOut = await openOffering(stack, tokens, { name: "Two units", totalUnits: 2, maxUnitsPerInvestor: 2 });
    const free = await openOffering(stack, tokens, { name: "Two more units", totalUnits: 2, maxUnitsPerInvestor: 2 });
    const wide = await openOffering(stack, tokens, { name: "Wide", totalUnits: 100, maxUnitsPerInvestor: 10 });

    const late = await buy(1, soldOut, 2); // investor 1: reservation released, then paid late
    const lateFree = await buy(3, free, 2); // investor 3: the same, but nobody took the units
    const lateFrozen = await buy(4, wide, 1); // investor 4: frozen before the late payment is attached
    await reservationsReleased([
      { account: 1, id: late.id },
      { account: 3, id: lateFree.id },
      { account: 4, id: lateFrozen.id },
    ]);

    // Investor 2 buys the two released units and pays: the offering is sold.
    const second = await buy(2, soldOut, 2);
    await stack.payUsdc({ from: 2, to: second.payment.recipient, amount: BigInt(second.payment.amount) });
    await waitFor(async () => ((await readPurchase(2, second.id)).status === "settled" ? true : undefined), {
      what: "second settled",
    });

    // Investor 1 pays the released purchase late: an unresolved payment linked to its order.
    const { hash } = await stack.payUsdc({ from: 1, to: late.payment.recipient, amount: BigInt(late.payment.amount) });
    const payment = await unresolved(hash);
    expect(payment.reason).toBe("late");
    const problem = await expectProblem(await adminAttach(payment, payment.orderId as string), 409, "offering_sold_out");
    expect(problem).toMatchObject({ unitsAvailable: 0, units: 2 });
    expect(await heldUnits(soldOut)).toBe(2);
    expect(await unitsAvailable(soldOut)).toBe(0);
    expect((await readPurchase(1, late.id)).reservation).toBe("released");
    // The partner's attach is refused the same way; the payment stays unresolved, to refund.
    await expectProblem(await partnerAttach(payment, payment.orderId as string), 409, "offering_sold_out");
    expect((await unresolved(hash)).reason).toBe("late");

    // Units still free: the attach takes them again, in its transaction, and the purchase is held and paid.
    const paidLate = await stack.payUsdc({ from: 3, to: lateFree.payment.recipient, amount: BigInt(lateFree.payment.amount) });
    const freePayment = await unresolved(paidLate.hash);
    await expectJson(await partnerAttach(freePayment, freePayment.orderId as string), 200);
    expect(await unitsAvailable(free)).toBe(0);
    expect(await heldUnits(free)).toBe(2);
    expect(await readPurchase(3, lateFree.id)).toMatchObject({ status: "settled", reservation: "held" });

    // Compliance is judged at the attach: a wallet frozen since is refused.
    const frozenPaid = await stack.payUsdc({
      from: 4,
      to: lateFrozen.payment.recipient,
      amount: BigInt(lateFrozen.payment.amount),
    });
    const frozenPayment = await unresolved(frozenPaid.hash);
    await expectJson(
      await api(stack, "POST", `/api/admin/investors/${accountWallet(stack, 4).address}/freeze`, {
        token: adminToken,
        json: { reason: "sanctions screening" },
      }),
      200,
    );
    const refused = await expectProblem(
      await adminAttach(frozenPayment, frozenPayment.orderId as string),
      403,
      "investor_not_eligible",
    );
    expect(refused.reasons).toContain("wallet_frozen");
    expect(await heldUnits(wide)).toBe(0);
  });

  it("refuses a stranger's transfer attached to an investor's purchase, through /v1 and the admin portal", async () => {
    const offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      { name: "Payer rule", totalUnits: 10 },
    );
    const purchase = await buy(5, offeringId, 1);
    // Account 6 is not the investor: it pays the exact amount to the settlement address.
    const { hash } = await stack.payUsdc({ from: 6, to: purchase.payment.recipient, amount: BigInt(purchase.payment.amount) });
    const payment = await unresolved(hash);
    expect(payment.reason).toBe("wrong_payer");
    await expectProblem(await partnerAttach(payment, payment.orderId as string), 409, "wrong_payer");
    await expectProblem(await adminAttach(payment, payment.orderId as string), 409, "wrong_payer");
    expect((await readPurchase(5, purchase.id)).status).not.toBe("settled");
    expect(await heldUnits(offeringId)).toBe(0);
  });
});

describe("finding 5: a flood of zero-value and dust transfers", () => {
  // Issue 40 (second review, still open): a 0-USDC `transfer`, or a `transferFrom` of 0
  // naming any wallet as payer (address poisoning), was an unresolved payment in the
  // partner's queue. It moves no money: the ledger lists it as `zero_value`, never a payment.
  it("lists zero-value movements in the ledger as zero_value, never as payments; dust is recorded without an event", {
    timeout: 60_000,
  }, async () => {
    const address = stack.local.partner.paymentAddress as Address;
    await createSession(stack, { totalPriceUsdc: "5000000" }); // an open session: dust is below its amount
    const zero: string[] = [];
    for (let index = 0; index < 10; index++) zero.push((await stack.payUsdc({ from: 7, to: address, amount: 0n })).hash);
    // A stranger's transferFrom of 0 "from" a customer's wallet: no allowance is needed for 0.
    const poisoner = stack.wallet(6);
    const customer = stack.local.accounts[5]?.address as Address;
    for (let index = 0; index < 5; index++) {
      const hash = await poisoner.writeContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "transferFrom",
        args: [customer, address, 0n],
        chain: stack.chain,
        account: poisoner.account!,
      });
      await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      zero.push(hash.toLowerCase());
    }
    const dust: string[] = [];
    for (let index = 0; index < 5; index++) dust.push((await stack.payUsdc({ from: 7, to: address, amount: 1n })).hash);
    // The worker records in chain order: once the dust (sent last) is recorded, the zero transfers were seen.
    const recorded = await waitFor(
      async () => {
        const list = await expectJson(await stack.partnerFetch("/v1/payments?status=unresolved&limit=500"), 200);
        const ours = list.data.filter((row: UnresolvedPayment) => dust.includes(row.transactionHash));
        return ours.length === dust.length ? ours : undefined;
      },
      { what: "5 dust transfers recorded" },
    );
    expect(recorded.every((row: UnresolvedPayment) => row.reason === "unmatched")).toBe(true);
    const payments = await expectJson(await stack.partnerFetch("/v1/payments?limit=500"), 200);
    const zeroPayments = payments.data.filter((row: UnresolvedPayment) => zero.includes(row.transactionHash));
    expect(zeroPayments, "zero-value transfers listed as payments").toEqual([]);

    const blocks = await Promise.all(
      [zero[0], dust.at(-1)].map(
        async (hash) => (await stack.publicClient.getTransactionReceipt({ hash: hash as Hex })).blockNumber,
      ),
    );
    const ledger = await expectJson(
      await stack.partnerFetch(`/v1/ledger?fromBlock=${blocks[0]}&toBlock=${blocks[1]}&limit=500`),
      200,
    );
    const entries = ledger.data as { kind: string; transactionHash: string; from: string; value: string }[];
    const zeroEntries = entries.filter((entry) => zero.includes(entry.transactionHash.toLowerCase()));
    expect(zeroEntries).toHaveLength(zero.length);
    expect(zeroEntries.every((entry) => entry.kind === "zero_value" && entry.value === "0")).toBe(true);
    expect(zeroEntries.filter((entry) => entry.from.toLowerCase() === customer.toLowerCase())).toHaveLength(5);
    const report = await expectJson(
      await stack.partnerFetch(`/v1/reports/reconciliation?fromBlock=${blocks[0]}&toBlock=${blocks[1]}`),
      200,
    );
    const row = report.data.find(
      (line: { paymentAddress: string }) => line.paymentAddress.toLowerCase() === address.toLowerCase(),
    );
    expect(row.reconciled).toBe(true);
    expect(row.sums.unmatched_in).toBe("5");

    const events = await outboxEvents(stack, store);
    const flooded = events.filter((event) => [...zero, ...dust].includes(String(event.data.transactionHash ?? "").toLowerCase()));
    expect(flooded.map((event) => event.type)).toEqual([]);
    // A real wrong amount is still told to the partner.
    const { hash } = await stack.payUsdc({ from: 7, to: address, amount: 1_234_567n });
    await waitFor(async () =>
      (await outboxEvents(stack, store)).some(
        (event) => event.type === "payment.unresolved" && event.data.transactionHash === hash.toLowerCase(),
      )
        ? true
        : undefined,
    );
  });
});

describe("finding 8: body and rate limits on every browser route without a credential", () => {
  const big = "x".repeat(200 * 1024);
  const post = (path: string, body: string, ip: string, type = "application/json") =>
    fetch(`${stack.ponder.baseUrl}${path}`, {
      method: "POST",
      headers: { "Content-Type": type, "X-Forwarded-For": ip },
      body,
    });
  const routes = [
    { path: "/api/partner/auth/challenge", type: "application/json", limit: SIGN_IN_LIMIT, ip: "203.0.113.10" },
    { path: "/checkout/cs_attack/qr", type: "application/json", limit: PUBLIC_LIMIT, ip: "203.0.113.11" },
    { path: "/claim/cs_attack", type: "application/x-www-form-urlencoded", limit: PUBLIC_LIMIT, ip: "203.0.113.12" },
  ];

  it("refuses a 200 KB body on each", async () => {
    for (const route of routes) {
      await expectProblem(await post(route.path, big, "203.0.113.20", route.type), 413, "payload_too_large");
    }
  });

  it("answers 429 with Retry-After past the per-IP limit on each", { timeout: 60_000 }, async () => {
    for (const route of routes) {
      const body =
        route.type === "application/json"
          ? JSON.stringify({ address: accountWallet(stack, 1).address, clientToken: "x" })
          : "clientToken=x";
      for (let index = 0; index < route.limit; index++) {
        const response = await post(route.path, body, route.ip, route.type);
        expect(response.status, `${route.path} #${index}`).not.toBe(429);
        await response.arrayBuffer();
      }
      const limited = await post(route.path, body, route.ip, route.type);
      expect(limited.headers.get("Retry-After"), route.path).not.toBeNull();
      await expectProblem(limited, 429, "rate_limited");
    }
  });
});

describe("finding 9: a test payment the test account cannot afford", () => {
  it("is a 422 problem, and nothing is sent", async () => {
    const session = await createSession(stack, { totalPriceUsdc: "3000000" });
    const problem = await expectProblem(
      await stack.partnerFetch(`/v1/checkout/sessions/${session.id}/test-payment`, {
        method: "POST",
        json: { amount: "999999999999999999" },
      }),
      422,
      "test_payment_refused",
    );
    expect(problem.detail).toContain("Nothing was sent");
  });
});
