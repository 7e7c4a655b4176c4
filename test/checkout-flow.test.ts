import { join } from "node:path";
import { type Address, getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSession, outboxEvents, publicPost, readOrder, readSession, submitHash } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

let stack: TestStack;
let store: Store;

beforeAll(async () => {
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

describe("commerce checkout, docs/quick-start.md", () => {
  it("creates a session with the docs/quick-start.md shape and a sub-cent reference", async () => {
    const session = await createSession(stack, { totalPriceUsdc: "25000000" });
    expect(session).toMatchObject({ status: "awaiting_payment", network: "local", chainId: 31337 });
    expect(session.clientToken).toMatch(/^ct_/);
    expect(session.payment).toMatchObject({
      token: "USDC",
      tokenAddress: getAddress(stack.local.contracts.usdc),
      recipient: getAddress(stack.local.partner.paymentAddress),
      totalPriceUsdc: "25000000",
      decimals: 6,
    });
    const offset = BigInt(session.payment.amount) - 25_000_000n;
    expect(offset).toBeGreaterThanOrEqual(1n);
    expect(offset).toBeLessThanOrEqual(9_999n);
    expect(session.payment.uri).toBe(
      `ethereum:${session.payment.tokenAddress}@31337/transfer?address=${session.payment.recipient}&uint256=${session.payment.amount}`,
    );
    expect(Date.parse(session.expiresAt) - Date.now()).toBeGreaterThan(29 * 60_000);
  });

  it("settles on a submitted hash, sends purchase.settled, then fulfils and mints the certificate", async () => {
    const session = await createSession(stack);
    const details = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/details`, {
      clientToken: session.clientToken,
      contact: { email: "ada@example.com", name: "Ada" },
      delivery: { name: "Ada", line1: "1 Main St", city: "Lisbon", postalCode: "1000-001", country: "PT" },
    });
    expect(details.status).toBe(200);

    const paid = await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    const submitted = await waitFor(async () => {
      const response = await submitHash(stack, session.clientToken, paid.hash);
      const body = await response.json();
      return body.status === "settled" ? body : undefined;
    });
    expect(submitted).toMatchObject({ status: "settled", transactionHash: paid.hash, session: { status: "settled" } });

    const events = await outboxEvents(stack, store);
    const settled = events.filter((event) => event.type === "purchase.settled" && event.data.orderId === session.orderId);
    expect(settled).toHaveLength(1);
    expect(settled[0]!.data).toMatchObject({
      externalOrderId: session.externalOrderId,
      purchaseId: session.purchaseId,
      transactionHash: paid.hash,
      totalPriceUsdc: "25000000",
      amountPaid: session.payment.amount,
    });

    const order = await readOrder(stack, session.orderId);
    expect(order).toMatchObject({
      status: "paid",
      amountPaid: session.payment.amount,
      totalPriceUsdc: "25000000",
      contact: { email: "ada@example.com" },
      delivery: { city: "Lisbon" },
      certificate: { enabled: true, status: "awaiting_wallet" },
      payment: { transactionHash: paid.hash },
    });

    const fulfil = (reference: string, key: string) =>
      stack.partnerFetch(`/v1/orders/${session.orderId}/fulfilment`, {
        method: "POST",
        json: { fulfilmentReference: reference, idempotencyKey: key },
      });
    expect((await fulfil("ship-1", "f-1")).status).toBe(200);
    expect((await fulfil("ship-1", "f-1")).status).toBe(200);
    const again = await fulfil("ship-2", "f-2");
    expect(again.status).toBe(409);
    expect((await again.json()).code).toBe("order_already_fulfilled");

    // Certificate: claim a voucher for wallet 6 and mint it from wallet 6.
    const buyer = stack.wallet(6);
    const claim = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: buyer.account!.address,
    });
    expect(claim.status).toBe(200);
    const voucher = await claim.json();
    expect(voucher.contract).toEqual({ address: stack.local.contracts.certificate, chainId: 31337 });
    expect(voucher.voucher.purchaseId).toBe(session.purchaseId);
    const mintHash = await buyer.sendTransaction({
      to: voucher.transaction.to as Address,
      data: voucher.transaction.data as Hex,
      chain: stack.chain,
      account: buyer.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash: mintHash });
    const minted = await waitFor(async () => {
      const current = await readOrder(stack, session.orderId);
      return current.certificate.status === "minted" ? current : undefined;
    });
    expect(minted.certificate).toMatchObject({ owner: getAddress(buyer.account!.address), mintTransactionHash: mintHash });
    const mintEvents = (await outboxEvents(stack, store)).filter(
      (event) => event.type === "certificate.minted" && event.data.orderId === session.orderId,
    );
    expect(mintEvents).toHaveLength(1);
    expect(mintEvents[0]!.data).toMatchObject({ transactionHash: mintHash, tokenId: BigInt(session.purchaseId).toString() });

    const claimAgain = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: buyer.account!.address,
    });
    expect(claimAgain.status).toBe(409);
    expect(await claimAgain.json()).toMatchObject({ code: "certificate_not_available", reason: "already_minted" });
  });

  it("settles a payment whose hash was never submitted", async () => {
    const session = await createSession(stack, { certificate: { enabled: false } });
    await stack.payUsdc({ from: 2, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    const settled = await waitFor(async () => {
      const current = await readSession(stack, session.id);
      return current.status === "settled" ? current : undefined;
    });
    expect(settled.status).toBe("settled");
  });

  it("reports a hash that is nowhere as payment not found, and keeps the session unpaid", async () => {
    const session = await createSession(stack);
    const response = await submitHash(stack, session.clientToken, `0x${"ab".repeat(32)}` as Hex);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(await response.json()).toMatchObject({ code: "payment_not_found", reason: "not_found" });
    expect((await readSession(stack, session.id)).status).toBe("awaiting_payment");
  });

  it("a new session for an already settled order comes back settled, without asking for money again", async () => {
    const first = await createSession(stack, { certificate: { enabled: false } });
    await stack.payUsdc({ from: 3, to: first.payment.recipient, amount: BigInt(first.payment.amount) });
    await waitFor(async () => ((await readSession(stack, first.id)).status === "settled" ? true : undefined));
    const second = await createSession(stack, {
      externalOrderId: first.externalOrderId,
      idempotencyKey: `retry-${first.externalOrderId}`,
    });
    expect(second.status).toBe("settled");
    expect(second.id).toBe(first.id);
    expect(second.payment.amount).toBe(first.payment.amount);
    const validate = await publicPost(stack, `/v1/public/checkout/sessions/${second.id}/validate`, {
      clientToken: second.clientToken,
    });
    expect((await validate.json()).status).toBe("settled");
  });
});
