import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { type Address, erc20Abi, type Hex, isAddressEqual, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { loadOrCreateLocalSecrets } from "../local/local-secrets.js";
import { type CreatedSession, createSession, readSession } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Sending refunds (issue 26) through the API on a real Anvil: the gasless send (the
// payment address signs an EIP-3009 authorization, the service's relayer submits it,
// and the refund completes only when the index shows the transfer), the refusals of
// every sending route (another partner's refund, a refund not ready, a tampered
// authorization, a second relay), and "Send with the test account" refused outside
// local mode. Nothing refused sends anything.

let stack: TestStack;
let store: Store;
let otherPartnerKey: string;
let shopKey: Hex;
let session: CreatedSession;

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
type Json = Record<string, any>;

async function call(path: string, init: RequestInit & { json?: unknown } = {}, apiKey?: string) {
  const headers = new Headers(init.headers);
  if (apiKey !== undefined) headers.set("Authorization", `Bearer ${apiKey}`);
  const response = await stack.partnerFetch(path, { ...init, headers });
  return { status: response.status, body: (await response.json()) as Json, type: response.headers.get("content-type") };
}

async function ok(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Json> {
  const answer = await call(path, init);
  if (answer.status >= 300) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

function expectProblem(answer: { status: number; body: Json; type: string | null }, status: number, code: string) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.type).toContain("application/problem+json");
  expect(answer.body.code).toBe(code);
}

const readyRefund = (amount: string) =>
  ok("/v1/refunds", {
    method: "POST",
    json: {
      orderId: session.orderId,
      amount,
      reason: "requested_by_customer",
      destination: "payer",
      idempotencyKey: `rs-${randomUUID()}`,
    },
  });

const refundIn = (id: string, status: string) =>
  waitFor(
    async () => {
      const read = await ok(`/v1/refunds/${id}`);
      return read.status === status ? read : undefined;
    },
    { what: `refund ${id} ${status}`, timeoutMs: 30_000 },
  );

/** The payment address signs what the service handed it (optionally tampered with after signing). */
async function signedAuthorization(refundId: string, change: (message: Json) => Json = (message) => message) {
  const request = await ok(`/v1/refunds/${refundId}/authorization`);
  const account = privateKeyToAccount(shopKey);
  const message = request.message;
  const signature = await account.signTypedData({
    domain: { ...request.domain, verifyingContract: request.domain.verifyingContract as Address },
    types: request.types,
    primaryType: "TransferWithAuthorization",
    message: {
      ...message,
      value: BigInt(message.value),
      validAfter: BigInt(message.validAfter),
      validBefore: BigInt(message.validBefore),
    },
  });
  return { request, body: { authorization: change(message), signature, domain: { chainId: request.domain.chainId } } };
}

const usdcBalance = (address: string) =>
  stack.publicClient.readContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address as Address],
  });

beforeAll(async () => {
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  const other = await createPartner(store, { name: "Other shop" });
  otherPartnerKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
  session = await createSession(stack, { totalPriceUsdc: "30000000", certificate: { enabled: false } });
  await stack.payUsdc({ from: 3, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
  await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined), {
    what: `session ${session.id} settled`,
  });
  const key = loadOrCreateLocalSecrets(stack.dataDir).paymentPrivateKeys.find((candidate) =>
    isAddressEqual(privateKeyToAccount(candidate).address, session.payment.recipient as Address),
  );
  if (key === undefined) throw new Error(`no local key for ${session.payment.recipient}`);
  shopKey = key;
}, 420_000);

afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

describe("gasless refund sends", () => {
  it("the relayer sends the payment address's authorization; the refund stays ready until the index shows the transfer", {
    timeout: 120_000,
  }, async () => {
    const shop = privateKeyToAccount(shopKey).address;
    // The payment address holds no ETH at all: the relayer pays the gas.
    await stack.testClient.setBalance({ address: shop, value: 0n });
    const refund = await readyRefund("4000000");
    const payer = stack.local.accounts[3]!.address;
    const before = await usdcBalance(payer);

    // Tampered after signing: the amount, the recipient. Refused, nothing sent.
    const { body } = await signedAuthorization(refund.id);
    expectProblem(
      await call(`/v1/refunds/${refund.id}/authorization`, {
        method: "POST",
        json: { ...body, authorization: { ...body.authorization, value: "3000000" } },
      }),
      422,
      "authorization_wrong_amount",
    );
    expectProblem(
      await call(`/v1/refunds/${refund.id}/authorization`, {
        method: "POST",
        json: { ...body, authorization: { ...body.authorization, to: stack.local.accounts[4]!.address } },
      }),
      422,
      "authorization_wrong_recipient",
    );
    // Signed by someone else than the payment address.
    const forged = await privateKeyToAccount(stack.local.accounts[4]!.privateKey as Hex).signMessage({ message: "x" });
    expectProblem(
      await call(`/v1/refunds/${refund.id}/authorization`, { method: "POST", json: { ...body, signature: forged } }),
      422,
      "authorization_bad_signature",
    );
    // Another partner cannot read the request nor relay it.
    expectProblem(await call(`/v1/refunds/${refund.id}/authorization`, {}, otherPartnerKey), 404, "not_found");
    expectProblem(
      await call(`/v1/refunds/${refund.id}/authorization`, { method: "POST", json: body }, otherPartnerKey),
      404,
      "not_found",
    );
    expect(await usdcBalance(payer)).toBe(before);

    // Anvil holds the relayed transfer in its mempool until the test mines it, so the refund
    // is certainly still ready (the index cannot show the transfer) when it is asked again.
    await stack.testClient.setAutomine(false);
    let relayed: Json = {};
    try {
      relayed = await ok(`/v1/refunds/${refund.id}/authorization`, { method: "POST", json: body });
      expect(relayed.refund.status).toBe("ready");
      // Relayed once: a second authorization of the same refund is refused before it reaches the chain.
      const second = await signedAuthorization(refund.id).catch((error: Error) => error);
      expect(String(second)).toContain("refund_already_relayed");
      await stack.testClient.mine({ blocks: 1 });
    } finally {
      await stack.testClient.setAutomine(true);
    }
    const receipt = await stack.publicClient.getTransactionReceipt({ hash: relayed.transactionHash });
    expect(isAddressEqual(receipt.from, relayed.relayer)).toBe(true);
    expect(isAddressEqual(receipt.from, shop)).toBe(false);

    await stack.testClient.mine({ blocks: 1 });
    const succeeded = await refundIn(refund.id, "succeeded");
    expect(succeeded.transactionHash).toBe(relayed.transactionHash);
    expect((await usdcBalance(payer)) - before).toBe(4_000_000n);
    expect(await stack.publicClient.getBalance({ address: shop })).toBe(0n);
    // Succeeded: nothing more to send or sign.
    expectProblem(await call(`/v1/refunds/${refund.id}/authorization`), 409, "refund_not_ready");
    await stack.testClient.setBalance({ address: shop, value: parseEther("10") });
  });
});

describe("Send with the test account, once (issue 40, finding 7)", () => {
  it("three concurrent test-sends of one refund send one transfer; the others are refused, nothing more sent", async () => {
    const refund = await readyRefund("1000000");
    const before = await usdcBalance(refund.destination);
    const answers = await Promise.all(
      [1, 2, 3].map(() => call(`/v1/refunds/${refund.id}/test-send`, { method: "POST", json: {} })),
    );
    const sent = answers.filter((answer) => answer.status === 200);
    expect(answers.map((answer) => answer.status).sort(), JSON.stringify(answers.map((answer) => answer.body))).toEqual([
      200, 409, 409,
    ]);
    for (const refused of answers.filter((answer) => answer.status !== 200)) expectProblem(refused, 409, "refund_already_sent");
    await stack.testClient.mine({ blocks: 1 });
    const succeeded = await refundIn(refund.id, "succeeded");
    expect(succeeded.transactionHash).toBe(sent[0]?.body.transactionHash);
    expect((await usdcBalance(refund.destination)) - before).toBe(1_000_000n);
    // Once it left the ready state, it is not ready to send at all.
    expectProblem(await call(`/v1/refunds/${refund.id}/test-send`, { method: "POST", json: {} }), 409, "refund_not_ready");
  });
});

describe("refusals of the sending routes", () => {
  it("another partner's refund, a refund not ready, a cancelled one: refused with their codes, nothing sent", async () => {
    const refund = await readyRefund("1000000");
    for (const path of [`/v1/refunds/${refund.id}/test-send`]) {
      expectProblem(await call(path, { method: "POST", json: {} }, otherPartnerKey), 404, "not_found");
    }
    expectProblem(await call(`/v1/refunds/${refund.id}/qr`, {}, otherPartnerKey), 404, "not_found");
    const asking = await ok("/v1/refunds", {
      method: "POST",
      json: { orderId: session.orderId, amount: "1000000", reason: "other", idempotencyKey: `rs-${randomUUID()}` },
    });
    const notReady = await call(`/v1/refunds/${asking.id}/test-send`, { method: "POST", json: {} });
    expectProblem(notReady, 409, "refund_not_ready");
    expect(notReady.body).toMatchObject({ status: 409, refundStatus: "awaiting_destination" });
    expectProblem(await call(`/v1/refunds/${asking.id}/authorization`), 409, "refund_not_ready");
    expectProblem(await call(`/v1/refunds/${asking.id}/qr`), 409, "refund_not_ready");
    await ok(`/v1/refunds/${refund.id}/cancel`, { method: "POST", json: {} });
    expectProblem(await call(`/v1/refunds/${refund.id}/test-send`, { method: "POST", json: {} }), 409, "refund_not_ready");
    expect((await ok(`/v1/refunds/${refund.id}`)).status).toBe("cancelled");
    expect((await ok(`/v1/refunds/${asking.id}`)).status).toBe("awaiting_destination");
    // The QR code of a ready refund is its EIP-681 link as an SVG.
    const ready = await readyRefund("1000000");
    const qr = await stack.partnerFetch(`/v1/refunds/${ready.id}/qr`);
    expect(qr.status).toBe(200);
    expect(qr.headers.get("content-type")).toContain("image/svg+xml");
    expect(await qr.text()).toContain("<svg");
  });

  it("outside local mode, Send with the test account is refused (local_mode_only) and nothing is sent", {
    timeout: 180_000,
  }, async () => {
    const refund = await readyRefund("1000000");
    const before = await usdcBalance(refund.destination);
    await stack.restartService({ LOCAL_MODE: "false", PUBLIC_BASE_URL: stack.ponder.baseUrl, DATABASE_SCHEMA: "not_local" });
    const refused = await call(`/v1/refunds/${refund.id}/test-send`, { method: "POST", json: {} });
    expectProblem(refused, 404, "local_mode_only");
    expect(await usdcBalance(refund.destination)).toBe(before);
    expect((await ok(`/v1/refunds/${refund.id}`)).status).toBe("ready");
  });
});
