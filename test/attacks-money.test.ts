import { join } from "node:path";
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueClientToken } from "../api/checkout/client-tokens.js";
import { issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { findFreePort } from "../local/ports.js";
import { createSession, outboxEvents, publicPost, readSession, submitHash } from "./support/checkout-helpers.js";
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
import { type RpcGate, startRpcGate } from "./support/rpc-gate.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Money and compliance attacks (issue 11, findings 1, 2, 4, 5, 6). The service reaches
// Anvil through a relay that can hold the indexer back (a transfer mined, not yet
// indexed), and settles after 2 confirmations, so a payment sits in `payment_pending`
// for a block: the windows in which a second payment or a reorg can strike.
let stack: TestStack;
let store: Store;
let gate: RpcGate;
let adminToken: string;
let issuerPartnerKey: string;
let offeringId: string;
let kycOfferingId: string;
const investorTokens: Record<number, string> = {};

type Purchase = {
  id: string;
  status: string;
  payment: { recipient: Address; amount: string };
  certificate: { status: string } | null;
};

beforeAll(async () => {
  const anvilPort = await findFreePort();
  gate = await startRpcGate(() => `http://127.0.0.1:${anvilPort}`);
  stack = await startTestStack({ anvilPort, env: { LOCAL_RPC_URL: gate.url, LOCAL_CONFIRMATIONS: "2" } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  adminToken = await signIn(stack, "admin", adminWallet(stack));
  const { issuer, token: issuerToken } = await registerIssuer(stack, adminToken, portalWallet(), "Harbour Capital");
  // The issuer's partner also holds an API key of the commerce API.
  issuerPartnerKey = (await issueApiKey(store, { partnerId: issuer.partnerId, mode: "test" })).apiKey;
  const tokens = { issuer: issuerToken, admin: adminToken };
  offeringId = await openOffering(stack, tokens, { unitPriceUsdc: "2000000" });
  kycOfferingId = await openOffering(stack, tokens, {
    name: "KYC only",
    unitPriceUsdc: "3000000",
    eligibility: { requireKyc: true },
  });
  for (const index of [1, 2, 3]) investorTokens[index] = await signIn(stack, "investor", accountWallet(stack, index));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
  await gate?.stop();
});

async function indexedBlock(): Promise<bigint> {
  const health = await (await fetch(`${stack.ponder.baseUrl}/v1/health`)).json();
  return BigInt(health.chains[0].indexedBlock ?? -1);
}

/** Waits until the index holds every block mined so far. */
async function indexCaughtUp() {
  const head = await stack.publicClient.getBlockNumber({ cacheTime: 0 });
  await waitFor(async () => ((await indexedBlock()) >= head ? true : undefined), { what: `index at block ${head}` });
}

/** Holds the indexer at the current head: what is mined from now on is on chain but not indexed. */
async function holdIndexer() {
  await indexCaughtUp();
  await gate.hold();
}

/** A block on top, so the payment before it has its 2 confirmations. */
const mine = () => stack.testClient.mine({ blocks: 1 });

/** Replaces the last `depth` blocks (by empty ones, or ones holding `transactions`), then mines on top. */
async function reorg(depth: number, transactions: [Hex, number][] = []) {
  await stack.reorg(depth, transactions);
  await mine();
}

function checkout(investor: number, body: Record<string, unknown>) {
  return api(stack, "POST", "/api/rwa/checkout", { token: investorTokens[investor], json: body });
}

async function settledPurchase(investor: number, body: Record<string, unknown>): Promise<Purchase> {
  const purchase = await expectJson<Purchase>(await checkout(investor, body), 201);
  await stack.payUsdc({ from: investor, to: purchase.payment.recipient, amount: BigInt(purchase.payment.amount) });
  await mine();
  return waitFor(
    async () => {
      const read = await expectJson<Purchase>(
        await api(stack, "GET", `/api/rwa/checkout/${purchase.id}`, { token: investorTokens[investor] }),
        200,
      );
      return read.status === "settled" ? read : undefined;
    },
    { what: `purchase ${purchase.id} settled` },
  );
}

async function expectProblem(response: Response, status: number, code: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  const problem = JSON.parse(text);
  expect(problem.code).toBe(code);
  return problem;
}

function freeze(address: string) {
  return api(stack, "POST", `/api/admin/investors/${address}/freeze`, {
    token: adminToken,
    json: { reason: "sanctions screening hit" },
  });
}

describe("an investor's certificate goes only to the eligible recipient the investor chose", () => {
  it("an issuer cannot re-open a settled purchase through the commerce API and claim its certificate", async () => {
    const purchase = await settledPurchase(1, { offeringId, units: 1 });
    const reopen = await fetch(`${stack.ponder.baseUrl}/v1/checkout/sessions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${issuerPartnerKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        externalOrderId: purchase.id,
        externalProductId: "x",
        productName: "x",
        quantity: 1,
        totalPriceUsdc: "2000000",
        paymentMethod: "usdc",
        checkoutMode: "hosted_transfer",
        certificate: { enabled: true },
        idempotencyKey: `reopen-${purchase.id}`,
      }),
    });
    const text = await reopen.text();
    const body = JSON.parse(text);
    if (body.clientToken !== undefined) {
      // The attack as reported: the fresh client token claims the certificate for any wallet.
      const claim = await publicPost(stack, `/v1/public/checkout/sessions/${body.id}/claim`, {
        clientToken: body.clientToken,
        walletAddress: stack.local.accounts[9]!.address,
      });
      expect(claim.status, "the public claim route issued a voucher for a stranger's wallet").not.toBe(200);
    }
    expect(reopen.status, text).toBe(409);
    expect(body.code).toBe("order_not_commerce");
    const certificate = await store
      .selectFrom("certificate")
      .innerJoin("orders", "orders.id", "certificate.order_id")
      .select(["certificate.status", "certificate.buyer"])
      .where("orders.external_order_id", "=", purchase.id)
      .executeTakeFirstOrThrow();
    expect(certificate).toEqual({ status: "awaiting_wallet", buyer: null });

    // Nor does a browser token of the purchase's session (older versions issued one at creation) open it.
    const { session_id } = await store
      .selectFrom("rwa_purchase")
      .select("session_id")
      .where("id", "=", purchase.id)
      .executeTakeFirstOrThrow();
    const leaked = await issueClientToken(store, { sessionId: session_id!, expiresAt: Date.now() + 3_600_000, now: Date.now() });
    await expectProblem(
      await publicPost(stack, `/v1/public/checkout/sessions/${session_id}/claim`, {
        clientToken: leaked,
        walletAddress: stack.local.accounts[9]!.address,
      }),
      401,
      "invalid_client_token",
    );
  });

  it("a frozen wallet cannot be named as the recipient", async () => {
    const frozen = portalWallet().address;
    await expectJson(await freeze(frozen), 200);
    const before = await store.selectFrom("rwa_purchase").select("id").execute();
    const problem = await expectProblem(
      await checkout(2, { offeringId, units: 1, recipient: frozen }),
      403,
      "recipient_not_eligible",
    );
    expect(problem.reasons).toEqual(["wallet_frozen"]);
    expect(await store.selectFrom("rwa_purchase").select("id").execute()).toHaveLength(before.length);
  });

  it("a recipient who fails the offering's KYC rule cannot be named, though the investor passes it", async () => {
    await expectJson(
      await api(stack, "PUT", `/api/admin/investors/${stack.local.accounts[2]!.address}/eligibility`, {
        token: adminToken,
        json: { kycStatus: "approved", jurisdiction: "PT" },
      }),
      200,
    );
    const unverified = portalWallet().address;
    const problem = await expectProblem(
      await checkout(2, { offeringId: kycOfferingId, units: 1, recipient: unverified }),
      403,
      "recipient_not_eligible",
    );
    expect(problem.reasons).toEqual(["kyc_required"]);
    // The investor may still buy for themselves.
    await expectJson(await checkout(2, { offeringId: kycOfferingId, units: 1 }), 201);
  });

  it("a recipient frozen after the purchase gets no voucher", async () => {
    const recipient = portalWallet().address;
    const purchase = await settledPurchase(3, { offeringId, units: 1, recipient });
    await expectJson(await freeze(recipient), 200);
    await expectProblem(
      await api(stack, "POST", `/api/rwa/certificates/${purchase.id}/claim`, { token: investorTokens[3], json: {} }),
      403,
      "recipient_not_eligible",
    );
    const certificate = await store
      .selectFrom("certificate")
      .innerJoin("orders", "orders.id", "certificate.order_id")
      .select("certificate.status")
      .where("orders.external_order_id", "=", purchase.id)
      .executeTakeFirstOrThrow();
    expect(certificate.status).toBe("awaiting_wallet");
  });
});

describe("a hash submitted before the index has the transfer meets the settlement rules", () => {
  it("a transfer from another wallet than the investor's is wrong_payer, not payment_pending", async () => {
    const purchase = await expectJson<Purchase>(await checkout(3, { offeringId, units: 2 }), 201);
    await holdIndexer();
    try {
      const paid = await stack.payUsdc({ from: 4, to: purchase.payment.recipient, amount: BigInt(purchase.payment.amount) });
      const response = await api(stack, "POST", "/api/rwa/settlements/wallet", {
        token: investorTokens[3],
        json: { purchaseId: purchase.id, transactionHash: paid.hash },
      });
      await expectProblem(response, 422, "wrong_payer");
    } finally {
      gate.release();
    }
  });

  it("a second transfer to an already settled session is a duplicate payment, not payment_pending", async () => {
    const session = await createSession(stack, { certificate: { enabled: false } });
    await stack.payUsdc({ from: 5, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await mine();
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined));
    await holdIndexer();
    try {
      const again = await stack.payUsdc({ from: 5, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
      await expectProblem(await submitHash(stack, session.clientToken, again.hash), 422, "duplicate_payment");
    } finally {
      gate.release();
    }
  });

  it("the answer for one session is not reused for another session of another amount", async () => {
    const paidSession = await createSession(stack, { certificate: { enabled: false } });
    const otherSession = await createSession(stack, { certificate: { enabled: false } });
    expect(otherSession.payment.recipient).toBe(paidSession.payment.recipient);
    expect(otherSession.payment.amount).not.toBe(paidSession.payment.amount);
    await holdIndexer();
    try {
      const paid = await stack.payUsdc({
        from: 6,
        to: paidSession.payment.recipient,
        amount: BigInt(paidSession.payment.amount),
      });
      const first = await expectJson(await submitHash(stack, paidSession.clientToken, paid.hash), 200);
      expect(first.status).toBe("payment_pending");
      await expectProblem(await submitHash(stack, otherSession.clientToken, paid.hash), 422, "wrong_amount");
    } finally {
      gate.release();
    }
  });
});

describe("one order, one credit", () => {
  it("a superseded session's transfer mined before the supersede and the new session's transfer: one settles, one is flagged", async () => {
    const first = await createSession(stack, { certificate: { enabled: false } });
    await holdIndexer();
    let secondHash: Hex;
    let second: Awaited<ReturnType<typeof createSession>>;
    try {
      const paidFirst = await stack.payUsdc({ from: 7, to: first.payment.recipient, amount: BigInt(first.payment.amount) });
      // The supersede comes after the block's second, so the first transfer is on time for its session.
      const block = await stack.publicClient.getBlock({ blockNumber: paidFirst.blockNumber });
      await waitFor(async () => (Date.now() > Number(block.timestamp) * 1000 + 1000 ? true : undefined));
      second = await createSession(stack, {
        externalOrderId: first.externalOrderId,
        idempotencyKey: `second-${first.externalOrderId}`,
        certificate: { enabled: false },
      });
      expect(second.id).not.toBe(first.id);
      expect((await readSession(stack, first.id)).status).toBe("expired");
      secondHash = (await stack.payUsdc({ from: 7, to: second.payment.recipient, amount: BigInt(second.payment.amount) })).hash;
    } finally {
      gate.release();
    }
    await mine();
    await mine();
    const flagged = await waitFor(
      async () =>
        (await store.selectFrom("payment").selectAll().where("transaction_hash", "=", secondHash).executeTakeFirst()) ??
        undefined,
      { what: "the second payment recorded" },
    );
    await waitFor(async () => ((await readSession(stack, first.id)).status === "settled" ? true : undefined), {
      what: "the first session settled",
    });
    await indexCaughtUp();
    const events = (await outboxEvents(stack, store)).filter((event) => event.data.orderId === first.orderId);
    expect(events.filter((event) => event.type === "purchase.settled")).toHaveLength(1);
    expect(flagged).toMatchObject({ status: "unresolved", reason: "duplicate_payment", session_id: second.id });
    const unresolved = events.filter((event) => event.type === "payment.unresolved");
    expect(unresolved).toHaveLength(1);
    expect(unresolved[0]!.data).toMatchObject({
      reason: "duplicate_payment",
      transactionHash: secondHash,
      sessionId: second.id,
      amount: second.payment.amount,
    });
    const listed = await (await stack.partnerFetch("/v1/payments?status=unresolved&limit=500")).json();
    expect(listed.data.map((payment: { transactionHash: string }) => payment.transactionHash)).toContain(secondHash);
  });
});

describe("a settled payment reorged away", () => {
  it("is detected, reported by payment.reorged and shown in health; mined again, payment.restored", async () => {
    const session = await createSession(stack, { certificate: { enabled: false } });
    const paid = await stack.payUsdc({ from: 8, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await mine();
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined));
    const healthy = await (await fetch(`${stack.ponder.baseUrl}/v1/health`)).json();
    expect(healthy.reorgs).toMatchObject({ settledPaymentsReorged: 0 });

    const raw: Hex = await stack.testClient.request({
      method: "eth_getRawTransactionByHash" as never,
      params: [paid.hash] as never,
    });
    // The payment's block and the one on top are replaced by empty blocks, then the chain moves on.
    await reorg(2);

    const reorged = await waitFor(
      async () =>
        (await outboxEvents(stack, store)).find(
          (event) => event.type === "payment.reorged" && event.data.transactionHash === paid.hash,
        ),
      { what: "payment.reorged" },
    );
    expect(reorged.data).toMatchObject({
      orderId: session.orderId,
      sessionId: session.id,
      externalOrderId: session.externalOrderId,
      amount: session.payment.amount,
      blockNumber: paid.blockNumber.toString(),
    });
    const payment = await store
      .selectFrom("payment")
      .selectAll()
      .where("transaction_hash", "=", paid.hash)
      .executeTakeFirstOrThrow();
    expect(payment.status).toBe("reorged");
    const health = await fetch(`${stack.ponder.baseUrl}/v1/health`);
    const body = await health.json();
    expect(body.reorgs.settledPaymentsReorged).toBe(1);
    expect(body.reorgs.last).toMatchObject({ transactionHash: paid.hash, orderId: session.orderId });
    expect(stack.ponder.output()).toContain(paid.hash);

    // The same signed transaction mined again: the credit stands again, and the partner hears so.
    await stack.publicClient.waitForTransactionReceipt({
      hash: await stack.publicClient.sendRawTransaction({ serializedTransaction: raw }),
    });
    await mine();
    const restored = await waitFor(
      async () =>
        (await outboxEvents(stack, store)).find(
          (event) => event.type === "payment.restored" && event.data.transactionHash === paid.hash,
        ),
      { what: "payment.restored" },
    );
    expect(restored.data).toMatchObject({ orderId: session.orderId, amount: session.payment.amount });
    expect(restored.data.blockNumber).not.toBe(paid.blockNumber.toString());
    const back = await store
      .selectFrom("payment")
      .selectAll()
      .where("transaction_hash", "=", paid.hash)
      .executeTakeFirstOrThrow();
    expect(back.status).toBe("settled");
    expect((await (await fetch(`${stack.ponder.baseUrl}/v1/health`)).json()).reorgs).toEqual({
      settledPaymentsReorged: 0,
      last: null,
    });
  });

  it("a payment re-mined in another block by a reorg stays credited, with no payment.reorged", async () => {
    const session = await createSession(stack, { certificate: { enabled: false } });
    const paid = await stack.payUsdc({ from: 8, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await mine();
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined));
    const before = await store
      .selectFrom("payment")
      .selectAll()
      .where("transaction_hash", "=", paid.hash)
      .executeTakeFirstOrThrow();
    const raw: Hex = await stack.testClient.request({
      method: "eth_getRawTransactionByHash" as never,
      params: [paid.hash] as never,
    });
    // The same signed transaction goes into the first replacement block.
    await reorg(2, [[raw, 0]]);
    const receipt = await stack.publicClient.getTransactionReceipt({ hash: paid.hash });
    expect(receipt.blockHash).not.toBe(before.block_hash);
    const moved = await waitFor(
      async () => {
        const row = await store
          .selectFrom("payment")
          .selectAll()
          .where("transaction_hash", "=", paid.hash)
          .executeTakeFirstOrThrow();
        return row.block_hash === receipt.blockHash ? row : undefined;
      },
      { what: "the payment's new block recorded" },
    );
    expect(moved.status).toBe("settled");
    const events = (await outboxEvents(stack, store)).filter((event) => event.data.transactionHash === paid.hash);
    expect(events.map((event) => event.type)).toEqual(["purchase.settled"]);
    expect((await (await fetch(`${stack.ponder.baseUrl}/v1/health`)).json()).reorgs.settledPaymentsReorged).toBe(0);
  });
});

// Last: it moves the chain's clock ten minutes ahead of the wall clock.
describe("a late transfer submitted before the index has it", () => {
  it("is late, not payment_pending", async () => {
    const session = await createSession(stack, { certificate: { enabled: false }, expiresInSeconds: 300 });
    await holdIndexer();
    try {
      await stack.testClient.setNextBlockTimestamp({ timestamp: BigInt(Math.floor(Date.now() / 1000) + 600) });
      const paid = await stack.payUsdc({ from: 9, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
      await expectProblem(await submitHash(stack, session.clientToken, paid.hash), 422, "late");
    } finally {
      gate.release();
    }
  });
});
