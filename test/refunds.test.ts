import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { BrowserContext, Page, Request } from "playwright-core";
import { type Address, createWalletClient, erc20Abi, type Hex, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { outgoingTransfersByKeys } from "../api/refunds/outgoing-transfer-record.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { logKey } from "../api/values/log-key.js";
import { createClient } from "../client/src/index.js";
import { loadOrCreateLocalSecrets, localRelayerAccount } from "../local/local-secrets.js";
import { axeFindings, type Chromium, freshArtifacts, launchChromium, requireChromium } from "./support/browser.js";
import {
  type CreatedSession,
  createSession,
  outboxEvents,
  publicPost,
  readOrder,
  readSession,
  submitHash,
} from "./support/checkout-helpers.js";
import { closeServer } from "./support/close-server.js";
import { expectJson } from "./support/portal-client.js";
import { putProvenFundingAddress } from "./support/reward-funding.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Two confirmations (LOCAL_CONFIRMATIONS=2) on one stack, one describe block per former file:
// - refunds: refunds (issue 26, SPEC 15) sent from the demo partner's payment address and proven from
//   the index; a refund sits in pending for a block, the window in which a reorg can strike.
// - hosted-checkout-browser: the hosted checkout in headless Chromium, the pending state shown.
// One stack instead of two saves a boot.

let shared: TestStack;

beforeAll(async () => {
  shared = await startTestStack({ env: { LOCAL_CONFIRMATIONS: "2" } });
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("refunds", () => {
  // Refunds (issue 26, SPEC 15) on a real Anvil: the demo partner's payment address is a key
  // of the local stack (`local-secrets.json`), so the tests send real refunds from it and the
  // service proves them from the index. Two confirmations, so a refund sits in `pending` for a
  // block: the window in which a reorg can strike.
  let stack: TestStack;
  let store: Store;
  let shop: ReturnType<typeof createWalletClient>;
  let otherPartnerKey: string;

  type RefundBody = {
    id: string;
    status: string;
    orderId: string | null;
    externalOrderId: string | null;
    paymentId?: string;
    amount: string;
    reason: string;
    destination: string | null;
    customerUrl: string | null;
    instructions: {
      chainId: number;
      tokenAddress: string;
      from: string;
      to: string;
      amount: string;
      uri: string;
      transaction: { to: string; data: string; chainId: number };
    } | null;
    transactionHash: string | null;
    succeededAt: string | null;
  };

  beforeAll(async () => {
    stack = shared;
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    const key = loadOrCreateLocalSecrets(stack.dataDir).paymentPrivateKeys[0] as Hex;
    const account = privateKeyToAccount(key);
    expect(account.address.toLowerCase()).toBe(stack.local.partner.paymentAddress.toLowerCase());
    // The payment address pays its own gas, as a merchant's wallet does.
    await stack.testClient.setBalance({ address: account.address, value: parseEther("10") });
    shop = createWalletClient({ chain: stack.chain, account, transport: http(stack.local.rpcUrl) });
    // Refunds leave the payment address: it starts with a float (an unmatched payment to it, as a top-up is).
    await stack.payUsdc({ from: 0, to: account.address, amount: 500_000_000n });
    const other = await createPartner(store, { name: "Other shop" });
    otherPartnerKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
  });
  afterAll(async () => {
    await store?.destroy();
  });

  const mine = () => stack.testClient.mine({ blocks: 1 });

  /** Sends USDC from the demo partner's payment address (the refund the merchant sends). */
  async function sendFromShop(to: string, amount: bigint): Promise<{ hash: Hex; blockNumber: bigint }> {
    const hash = await shop.writeContract({
      address: stack.local.contracts.usdc as Address,
      abi: erc20Abi,
      functionName: "transfer",
      args: [to as Address, amount],
      chain: stack.chain,
      account: shop.account!,
    });
    const receipt = await stack.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    return { hash, blockNumber: receipt.blockNumber };
  }

  async function settledOrder(payer = 1): Promise<CreatedSession & { paid: bigint; payer: Address }> {
    const session = await createSession(stack, { certificate: { enabled: true } });
    await stack.payUsdc({ from: payer, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await mine();
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined), {
      what: `session ${session.id} settled`,
    });
    return { ...session, paid: BigInt(session.payment.amount), payer: stack.local.accounts[payer]?.address as Address };
  }

  async function refund(body: Record<string, unknown>, apiKey?: string) {
    return stack.partnerFetch("/v1/refunds", {
      method: "POST",
      json: { reason: "requested_by_customer", idempotencyKey: `rf-${randomUUID()}`, ...body },
      headers: apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` },
    });
  }

  async function created(response: Response, status = 201): Promise<RefundBody> {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    return JSON.parse(text) as RefundBody;
  }

  async function readRefund(id: string): Promise<RefundBody> {
    const response = await stack.partnerFetch(`/v1/refunds/${id}`);
    expect(response.status).toBe(200);
    return (await response.json()) as RefundBody;
  }

  const refundIn = (id: string, status: string) =>
    waitFor(
      async () => {
        const read = await readRefund(id);
        return read.status === status ? read : undefined;
      },
      { what: `refund ${id} ${status}`, timeoutMs: 45_000 },
    );

  async function expectProblem(response: Response, status: number, code: string) {
    const text = await response.text();
    expect(response.status, text).toBe(status);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(JSON.parse(text).code).toBe(code);
  }

  /** Every refund row and guard of the store: "nothing changed" is this, equal before and after. */
  async function refundState() {
    const [refunds, allowances, events] = await Promise.all([
      store.selectFrom("refund").selectAll().orderBy("id").execute(),
      store.selectFrom("refund_allowance").selectAll().orderBy("payment_key").execute(),
      store.selectFrom("event").select("id").where("type", "like", "refund.%").execute(),
    ]);
    return { refunds, allowances, events: events.length };
  }

  /** Waits until the refund worker recorded this outgoing transfer, and answers how. */
  async function outgoingRecord(hash: Hex) {
    return waitFor(
      async () => {
        const receipt = await stack.publicClient.getTransactionReceipt({ hash });
        const logIndex = receipt.logs[0]?.logIndex ?? 0;
        const found = await outgoingTransfersByKeys(store, [{ chainId: stack.local.chainId, transactionHash: hash, logIndex }]);
        return found.get(logKey({ chainId: stack.local.chainId, transactionHash: hash, logIndex }));
      },
      { what: `outgoing transfer ${hash} recorded` },
    );
  }

  describe("a settled order, refunded in part then in full", () => {
    let order: Awaited<ReturnType<typeof settledOrder>>;
    let first: RefundBody;

    it("a partial refund to the payer is ready at once, with instructions; wrong amount or address never completes it", async () => {
      order = await settledOrder(1);
      first = await created(await refund({ orderId: order.orderId, amount: "10000000", destination: "payer" }));
      expect(first).toMatchObject({
        status: "ready",
        orderId: order.orderId,
        externalOrderId: order.externalOrderId,
        amount: "10000000",
        destination: order.payer,
        customerUrl: null,
        transactionHash: null,
      });
      expect(first.paymentId).toBeUndefined();
      expect(first.instructions).toMatchObject({
        chainId: stack.local.chainId,
        from: stack.local.partner.paymentAddress,
        to: order.payer,
        amount: "10000000",
        uri: `ethereum:${stack.local.contracts.usdc}@${stack.local.chainId}/transfer?address=${order.payer}&uint256=10000000`,
      });
      expect(first.instructions?.transaction.to).toBe(stack.local.contracts.usdc);

      // A transfer of the wrong amount, and one of the right amount to the wrong address: both stay unmatched.
      const wrongAmount = await sendFromShop(order.payer, 9_999_999n);
      const wrongAddress = await sendFromShop(stack.local.accounts[5]?.address as string, 10_000_000n);
      await mine();
      expect(await outgoingRecord(wrongAmount.hash)).toEqual({ status: "unmatched", refundId: null });
      expect(await outgoingRecord(wrongAddress.hash)).toEqual({ status: "unmatched", refundId: null });
      expect((await readRefund(first.id)).status).toBe("ready");

      const sent = await sendFromShop(order.payer, 10_000_000n);
      expect(await outgoingRecord(sent.hash)).toEqual({ status: "matched", refundId: first.id });
      expect((await readRefund(first.id)).status).toBe("pending");
      await mine();
      const succeeded = await refundIn(first.id, "succeeded");
      expect(succeeded.transactionHash).toBe(sent.hash);
      expect(succeeded.succeededAt).not.toBeNull();

      const read = await readOrder(stack, order.orderId);
      expect(read).toMatchObject({ amountRefunded: "10000000", amountRefundPending: "0", refundStatus: "partial" });
      const events = (await outboxEvents(stack, store)).filter((event) => event.data.refundId === first.id);
      expect(events.map((event) => event.type)).toEqual(["refund.created", "refund.ready", "refund.succeeded"]);
      expect(events[2]?.data).toMatchObject({
        orderId: order.orderId,
        externalOrderId: order.externalOrderId,
        refundId: first.id,
        amount: "10000000",
        destination: order.payer,
        transactionHash: sent.hash,
      });
    });

    it("refunding more than remains is refused and changes nothing", async () => {
      const before = await refundState();
      await expectProblem(
        await refund({ orderId: order.orderId, amount: (order.paid - 10_000_000n + 1n).toString() }),
        409,
        "refund_exceeds_remaining",
      );
      expect(await refundState()).toEqual(before);
    });

    it("the rest, to an address the customer enters on the refund page; a full refund revokes the certificate", async () => {
      const rest = await created(await refund({ orderId: order.orderId }));
      expect(rest).toMatchObject({
        status: "awaiting_destination",
        amount: (order.paid - 10_000_000n).toString(),
        instructions: null,
      });
      const url = new URL(rest.customerUrl as string);
      expect(url.pathname).toBe(`/refund/${rest.id}`);
      const token = new URLSearchParams(url.hash.slice(1)).get("rt") as string;
      expect(token).toMatch(/^rt_/);
      const customer = stack.local.accounts[7]?.address as Address;

      // Refusals say why and change nothing.
      const before = await refundState();
      const destination = (address: string, refundToken = token) =>
        publicPost(stack, `/v1/public/refunds/${rest.id}/destination`, { refundToken, destination: address });
      await expectProblem(await destination("0x0000000000000000000000000000000000000000"), 422, "destination_is_zero_address");
      await expectProblem(await destination(stack.local.contracts.usdc), 422, "destination_is_token");
      await expectProblem(await destination(stack.local.partner.paymentAddress), 422, "destination_is_payment_address");
      await expectProblem(await destination(customer, "rt_stolen"), 401, "invalid_refund_token");
      expect(await refundState()).toEqual(before);

      const validated = await publicPost(stack, `/v1/public/refunds/${rest.id}/validate`, { refundToken: token });
      expect(validated.status).toBe(200);
      expect(await validated.json()).toMatchObject({
        id: rest.id,
        status: "awaiting_destination",
        shop: { displayName: "Demo shop" },
      });

      const set = await destination(customer);
      expect(set.status).toBe(200);
      expect(await set.json()).toMatchObject({ status: "ready", destination: customer });
      // Reused, or changed after ready: refused, the destination stays.
      const afterSet = await refundState();
      await expectProblem(await destination(stack.local.accounts[8]?.address as string), 409, "refund_destination_locked");
      await expectProblem(await destination(customer), 409, "refund_destination_locked");
      expect(await refundState()).toEqual(afterSet);

      const ready = await readRefund(rest.id);
      expect(ready.instructions?.to).toBe(customer);
      expect((await readOrder(stack, order.orderId)).amountRefundPending).toBe(ready.amount);
      await sendFromShop(customer, BigInt(ready.amount));
      await mine();
      await refundIn(rest.id, "succeeded");
      expect(await readOrder(stack, order.orderId)).toMatchObject({
        amountRefunded: order.paid.toString(),
        amountRefundPending: "0",
        refundStatus: "full",
      });
      // Nothing remains; the certificate can no longer be claimed.
      await expectProblem(await refund({ orderId: order.orderId }), 409, "refund_exceeds_remaining");
      await expectProblem(
        await publicPost(stack, `/v1/public/checkout/sessions/${order.id}/claim`, {
          clientToken: order.clientToken,
          walletAddress: order.payer,
        }),
        409,
        "certificate_revoked",
      );
      // A succeeded refund cannot be cancelled.
      await expectProblem(
        await stack.partnerFetch(`/v1/refunds/${rest.id}/cancel`, { method: "POST" }),
        409,
        "refund_not_cancellable",
      );
    });

    it("lists refunds by order and status, newest first, paged", async () => {
      const page = await (await stack.partnerFetch(`/v1/refunds?orderId=${order.orderId}&limit=1`)).json();
      expect(page.data).toHaveLength(1);
      expect(page.nextCursor).not.toBeNull();
      const next = await (
        await stack.partnerFetch(`/v1/refunds?orderId=${order.orderId}&limit=1&cursor=${page.nextCursor}`)
      ).json();
      expect(next.data[0].id).toBe(first.id);
      expect(next.nextCursor).toBeNull();
      const succeeded = await (await stack.partnerFetch(`/v1/refunds?orderId=${order.orderId}&status=succeeded`)).json();
      expect(succeeded.data).toHaveLength(2);
      const cancelled = await (await stack.partnerFetch(`/v1/refunds?orderId=${order.orderId}&status=cancelled`)).json();
      expect(cancelled.data).toHaveLength(0);
    });
  });

  describe("an overpaid unresolved payment", () => {
    it("is refunded in its overpaid part, and the old refund-requested route creates a refund", async () => {
      const session = await createSession(stack, { certificate: { enabled: false } });
      const extra = 3_000_000n;
      const paid = await stack.payUsdc({
        from: 2,
        to: session.payment.recipient,
        amount: BigInt(session.payment.amount) + extra,
      });
      await mine();
      await submitHash(stack, session.clientToken, paid.hash);
      const payment = { chainId: stack.local.chainId, transactionHash: paid.hash, logIndex: 0 };
      const unresolved = await waitFor(
        async () => {
          const row = await store.selectFrom("payment").selectAll().where("transaction_hash", "=", paid.hash).executeTakeFirst();
          return row?.reason === "overpaid" ? row : undefined;
        },
        { what: "an overpaid payment" },
      );
      expect(unresolved.status).toBe("unresolved");
      const part = await created(
        await refund({ payment, amount: extra.toString(), reason: "wrong_amount", destination: "payer" }),
      );
      expect(part).toMatchObject({
        status: "ready",
        orderId: session.orderId,
        paymentId: `${stack.local.chainId}:${paid.hash}:0`,
        amount: extra.toString(),
        destination: stack.local.accounts[2]?.address,
      });
      await sendFromShop(stack.local.accounts[2]?.address as string, extra);
      await mine();
      await refundIn(part.id, "succeeded");
      const payments = await (await stack.partnerFetch("/v1/payments?status=refund_requested&limit=500")).json();
      expect(payments.data.map((row: { transactionHash: string }) => row.transactionHash)).toContain(paid.hash);

      // Another partner cannot refund it, nor read the refund.
      await expectProblem(await refund({ payment }, otherPartnerKey), 404, "not_found");
      await expectProblem(
        await stack.partnerFetch(`/v1/refunds/${part.id}`, { headers: { Authorization: `Bearer ${otherPartnerKey}` } }),
        404,
        "not_found",
      );

      // The old marker on an unmatched payment: a refund of all of it, waiting for the customer's address.
      const stray = await stack.payUsdc({ from: 3, to: session.payment.recipient, amount: 1_234_567n });
      await mine();
      await waitFor(async () =>
        (await store.selectFrom("payment").select("status").where("transaction_hash", "=", stray.hash).executeTakeFirst())
          ?.status === "unresolved"
          ? true
          : undefined,
      );
      const marked = await stack.partnerFetch(`/v1/payments/${stack.local.chainId}/${stray.hash}/0/refund-requested`, {
        method: "POST",
        json: { note: "customer asked" },
      });
      expect(marked.status).toBe(200);
      const body = await marked.json();
      expect(body).toMatchObject({
        status: "refund_requested",
        refund: { status: "awaiting_destination", amount: "1234567", note: "customer asked" },
      });
      expect(body.refund.customerUrl).toContain(`/refund/${body.refund.id}#rt=`);

      // Selected by the service by payment (`paymentId=`, the refund's own name of it), in any letter case, CSV too.
      const byPayment = async (paymentId: string, init?: RequestInit) =>
        stack.partnerFetch(`/v1/refunds?paymentId=${encodeURIComponent(paymentId)}`, init);
      const ofPart = await (await byPayment(`${stack.local.chainId}:${paid.hash.toUpperCase().replace("0X", "0x")}:0`)).json();
      expect(ofPart.data.map((row: { id: string }) => row.id)).toEqual([part.id]);
      const ofStray = await (await byPayment(`${stack.local.chainId}:${stray.hash}:0`)).json();
      expect(ofStray.data.map((row: { id: string }) => row.id)).toEqual([body.refund.id]);
      expect((await (await byPayment(`${stack.local.chainId}:${stray.hash}:1`)).json()).data).toEqual([]);
      const csv = await (await byPayment(`${stack.local.chainId}:${paid.hash}:0`, { headers: { Accept: "text/csv" } })).text();
      expect(csv.trim().split("\r\n")).toHaveLength(2);
      expect(csv).toContain(part.id);
      // Another partner's filter finds nothing of it; a malformed id is refused, changing nothing.
      const other = await byPayment(`${stack.local.chainId}:${paid.hash}:0`, {
        headers: { Authorization: `Bearer ${otherPartnerKey}` },
      });
      expect((await other.json()).data).toEqual([]);
      for (const bad of [`${paid.hash}:0`, `${stack.local.chainId}:0x12:0`, `${stack.local.chainId}:${paid.hash}:x`])
        await expectProblem(await byPayment(bad), 400, "invalid_request");
    });
  });

  describe("20 concurrent partial refunds whose sum exceeds what was paid", () => {
    it("create refunds only up to what was paid; the others are refused", async () => {
      const order = await settledOrder(4);
      const each = 2_000_000n;
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => refund({ orderId: order.orderId, amount: each.toString(), destination: "payer" })),
      );
      const statuses = responses.map((response) => response.status);
      const createdCount = statuses.filter((status) => status === 201).length;
      expect(createdCount).toBe(Number(order.paid / each));
      expect(statuses.filter((status) => status === 409)).toHaveLength(20 - createdCount);
      for (const response of responses.filter((r) => r.status === 409)) {
        expect((await response.json()).code).toBe("refund_exceeds_remaining");
      }
      const listed = await (await stack.partnerFetch(`/v1/refunds?orderId=${order.orderId}&limit=100`)).json();
      const sum = listed.data.reduce((total: bigint, row: RefundBody) => total + BigInt(row.amount), 0n);
      expect(sum).toBeLessThanOrEqual(order.paid);
      expect(listed.data).toHaveLength(createdCount);
    });
  });

  describe("an outgoing transfer that no refund asked for", () => {
    it("is recorded as unmatched, never dropped", async () => {
      const sent = await sendFromShop(stack.local.accounts[9]?.address as string, 777n);
      await mine();
      expect(await outgoingRecord(sent.hash)).toEqual({ status: "unmatched", refundId: null });
    });
  });

  describe("cancel", () => {
    it("a ready refund is cancelled; its transfer never completes it, and its amount is refundable again", async () => {
      const order = await settledOrder(5);
      const ready = await created(await refund({ orderId: order.orderId, destination: "payer" }));
      const cancel = await stack.partnerFetch(`/v1/refunds/${ready.id}/cancel`, { method: "POST" });
      expect(cancel.status).toBe(200);
      expect(await cancel.json()).toMatchObject({ id: ready.id, status: "cancelled" });
      // Cancelling again answers the same.
      expect((await stack.partnerFetch(`/v1/refunds/${ready.id}/cancel`, { method: "POST" })).status).toBe(200);
      // Another partner cannot cancel it.
      await expectProblem(
        await stack.partnerFetch(`/v1/refunds/${ready.id}/cancel`, {
          method: "POST",
          headers: { Authorization: `Bearer ${otherPartnerKey}` },
        }),
        404,
        "not_found",
      );
      const sent = await sendFromShop(order.payer, order.paid);
      await mine();
      expect(await outgoingRecord(sent.hash)).toEqual({ status: "unmatched", refundId: null });
      expect((await readRefund(ready.id)).status).toBe("cancelled");
      const events = (await outboxEvents(stack, store)).filter((event) => event.data.refundId === ready.id);
      expect(events.map((event) => event.type)).toEqual(["refund.created", "refund.ready", "refund.cancelled"]);
      // Whole again: a new refund of all of it fits.
      const again = await created(await refund({ orderId: order.orderId }));
      expect(again.amount).toBe(order.paid.toString());
      // Another partner's order is as missing as one that does not exist.
      await expectProblem(await refund({ orderId: order.orderId }, otherPartnerKey), 404, "not_found");
    });
  });

  describe("two refunds that would match one transfer", () => {
    it("the older is served first; the second waits for its own transfer", async () => {
      const order = await settledOrder(6);
      const older = await created(await refund({ orderId: order.orderId, amount: "5000000", destination: "payer" }));
      const newer = await created(await refund({ orderId: order.orderId, amount: "5000000", destination: "payer" }));
      await sendFromShop(order.payer, 5_000_000n);
      await mine();
      await refundIn(older.id, "succeeded");
      expect((await readRefund(newer.id)).status).toBe("ready");
      await sendFromShop(order.payer, 5_000_000n);
      await mine();
      await refundIn(newer.id, "succeeded");
    });
  });

  describe("a refund's transfer reorged off the chain", () => {
    it("the refund waits again; the same transfer mined again completes it", async () => {
      const order = await settledOrder(3);
      const ready = await created(await refund({ orderId: order.orderId, amount: "4000000", destination: "payer" }));
      const sent = await sendFromShop(order.payer, 4_000_000n);
      await refundIn(ready.id, "pending");
      const raw: Hex = await stack.testClient.request({
        method: "eth_getRawTransactionByHash" as never,
        params: [sent.hash] as never,
      });
      // The transfer's block is replaced by an empty one, then the chain moves on.
      await stack.reorg(1);
      await mine();
      const back = await refundIn(ready.id, "ready");
      expect(back.transactionHash).toBeNull();
      const row = await store
        .selectFrom("outgoing_transfer")
        .selectAll()
        .where("transaction_hash", "=", sent.hash)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe("reorged");
      expect(
        await outgoingTransfersByKeys(store, [
          { chainId: stack.local.chainId, transactionHash: sent.hash, logIndex: row.log_index },
        ]),
      ).toEqual(
        new Map([
          [`${stack.local.chainId}:${sent.hash.toLowerCase()}:${row.log_index}`, { status: "unmatched", refundId: null }],
        ]),
      );

      await stack.publicClient.waitForTransactionReceipt({
        hash: await stack.publicClient.sendRawTransaction({ serializedTransaction: raw }),
      });
      await mine();
      const done = await refundIn(ready.id, "succeeded");
      expect(done.transactionHash).toBe(sent.hash);
    });
  });

  describe("the client library", () => {
    it("creates, reads, lists and cancels refunds", async () => {
      const order = await settledOrder(2);
      const client = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.local.baseUrl });
      const made = await client.refunds.create({
        orderId: order.orderId,
        amount: 1_000_000n,
        reason: "requested_by_customer",
        idempotencyKey: `client-${order.orderId}`,
      });
      expect(made).toMatchObject({ status: "awaiting_destination", amount: "1000000" });
      expect(made.customerUrl).toContain("#rt=");
      expect((await client.refunds.retrieve(made.id)).id).toBe(made.id);
      const listed = await client.refunds.list({ orderId: order.orderId });
      expect(listed.data.map((row) => row.id)).toEqual([made.id]);
      expect((await client.refunds.cancel(made.id)).status).toBe("cancelled");
    });
  });

  /** Waits until the refund worker recorded the transfers of this transaction, and answers their rows. */
  async function outgoingRows(hash: Hex) {
    return waitFor(
      async () => {
        const rows = await store
          .selectFrom("outgoing_transfer")
          .selectAll()
          .where("transaction_hash", "=", hash.toLowerCase())
          .execute();
        return rows.length > 0 ? rows : undefined;
      },
      { what: `outgoing transfers of ${hash} recorded` },
    );
  }

  const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;

  describe("destinations where money would be stuck (issue 40, finding 8)", () => {
    it("the relayer, the reward distributor and the certificate contract are refused, by the partner and on the refund page", async () => {
      const order = await settledOrder(2);
      const ours = [localRelayerAccount().address, stack.local.contracts.rewardDistributor, stack.local.contracts.certificate];
      const asking = await created(await refund({ orderId: order.orderId, amount: "1000000" }));
      const token = new URLSearchParams(new URL(asking.customerUrl as string).hash.slice(1)).get("rt") as string;
      const before = await refundState();
      for (const destination of ours) {
        await expectProblem(
          await refund({ orderId: order.orderId, amount: "1000000", destination }),
          422,
          "destination_is_service_address",
        );
        await expectProblem(
          await publicPost(stack, `/v1/public/refunds/${asking.id}/destination`, { refundToken: token, destination }),
          422,
          "destination_is_service_address",
        );
      }
      expect(await refundState()).toEqual(before);
    });
  });

  describe("a reward claim to the destination of a ready refund, of its amount (issue 40, finding 2)", () => {
    it("is a reward claim in the books and never completes the refund; the refund's own transfer does", async () => {
      const order = await settledOrder(4);
      const customer = freshAddress();
      // The payment address is the partner's funding address (docs/accounting.md allows it).
      const settings = await putProvenFundingAddress(stack, {
        address: shop.account!.address,
        sign: (message) => shop.signMessage({ message, account: shop.account! }),
      });
      expect(settings.status, await settings.text()).toBe(200);
      const approval = await shop.writeContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "approve",
        args: [stack.local.contracts.rewardDistributor as Address, 1_000_000_000n],
        chain: stack.chain,
        account: shop.account!,
      });
      await stack.publicClient.waitForTransactionReceipt({ hash: approval, pollingInterval: 50 });
      await stack.partnerFetch("/v1/rewards/settings", { method: "PUT", json: {} }); // forgets the cached allowance

      const ready = await created(await refund({ orderId: order.orderId, amount: "1000000", destination: customer }));
      expect(ready.status).toBe("ready");
      const granted = await stack.partnerFetch(`/v1/orders/${order.orderId}/rewards`, {
        method: "POST",
        json: { amount: "1000000", idempotencyKey: `rw-${randomUUID()}` },
      });
      const reward = JSON.parse(await granted.text());
      expect(granted.status, JSON.stringify(reward)).toBe(201);
      const voucher = await publicPost(stack, `/v1/public/rewards/${reward.id}/claim`, {
        clientToken: order.clientToken,
        walletAddress: customer,
      });
      const claim = JSON.parse(await voucher.text());
      expect(voucher.status, JSON.stringify(claim)).toBe(200);
      const claimer = stack.wallet(6);
      const claimHash = await claimer.sendTransaction({
        to: claim.transaction.to,
        data: claim.transaction.data,
        chain: stack.chain,
        account: claimer.account!,
      });
      expect((await stack.publicClient.waitForTransactionReceipt({ hash: claimHash, pollingInterval: 50 })).status).toBe(
        "success",
      );
      await mine();
      await mine();
      await waitFor(
        async () =>
          (await (await stack.partnerFetch(`/v1/rewards/${reward.id}`)).json()).status === "claimed" ? true : undefined,
        { what: "reward claimed" },
      );
      // The distributor's transferFrom out of the payment address is recorded, and stays unmatched.
      const rows = await outgoingRows(claimHash);
      expect(rows.map((row) => [row.to_address, row.amount, row.status, row.refund_id])).toEqual([
        [customer.toLowerCase(), "1000000", "unmatched", null],
      ]);
      const read = await readRefund(ready.id);
      expect(read.status).toBe("ready");
      expect(read.transactionHash).toBeNull();
      const head = await stack.publicClient.getBlockNumber();
      const ledger = await (await stack.partnerFetch(`/v1/ledger?fromBlock=1&toBlock=${head}&limit=500`)).json();
      const entries = ledger.data.filter(
        (entry: { transactionHash: string }) => entry.transactionHash.toLowerCase() === claimHash.toLowerCase(),
      );
      expect(entries.map((entry: { kind: string; rewardId?: string }) => [entry.kind, entry.rewardId])).toEqual([
        ["reward_claim", reward.id],
      ]);

      // The refund is still owed: its own transfer completes it.
      const sent = await sendFromShop(customer, 1_000_000n);
      await mine();
      const done = await refundIn(ready.id, "succeeded");
      expect(done.transactionHash).toBe(sent.hash);
    });
  });

  describe("the chain's clock behind the service's (issue 40)", () => {
    it("a refund sent right after it became ready completes it, though its block time is before the ready time", async () => {
      const order = await settledOrder(5);
      const ready = await created(await refund({ orderId: order.orderId, amount: "2000000", destination: "payer" }));
      const readyAt = Date.now();
      // The chain's clock 30 s behind the service's (a server clock running ahead, or Anvil after a reorg).
      await stack.testClient.request({ method: "anvil_setTime" as never, params: [Math.floor(readyAt / 1000) - 30] as never });
      try {
        const sent = await sendFromShop(order.payer, 2_000_000n);
        const block = await stack.publicClient.getBlock({ blockNumber: sent.blockNumber });
        expect(Number(block.timestamp) * 1000).toBeLessThan(readyAt - 20_000);
        await mine();
        const done = await refundIn(ready.id, "succeeded");
        expect(done.transactionHash).toBe(sent.hash);
        expect(await outgoingRecord(sent.hash)).toEqual({ status: "matched", refundId: ready.id });
      } finally {
        await stack.testClient.setNextBlockTimestamp({ timestamp: BigInt(Math.floor(Date.now() / 1000) + 1) });
        await mine();
      }
    });
  });
});

describe("hosted-checkout-browser", () => {
  // The hosted checkout in headless Chromium (Debian's package through playwright-core),
  // opened standalone from the session's `url`, with two confirmations so the pending
  // state shows. Every state is screenshotted at 1280 and 390 px into test-artifacts/
  // (not committed) and audited with axe-core.

  const ARTIFACTS = freshArtifacts("hosted-checkout");
  const WIDE = { width: 1280, height: 900 };
  const PHONE = { width: 390, height: 844 };

  let stack: TestStack;
  let context: BrowserContext;
  let chromium: Chromium | undefined;
  let shopServer: Server;
  let shopOrigin: string;
  const requests: Request[] = [];
  const tokens: string[] = [];
  let releaseThanks: () => void = () => undefined;
  const shopAnswersThanks = new Promise<void>((resolve) => {
    releaseThanks = resolve;
  });

  beforeAll(async () => {
    requireChromium();
    stack = shared;
    // The shop's own pages (successUrl, cancelUrl) on another origin.
    shopServer = createServer(async (request, response) => {
      // The shop answers the success page only once the test has looked at the settled
      // state: the page's timed redirect then cannot replace it mid-screenshot on a slow machine.
      if (request.url?.startsWith("/thanks")) await shopAnswersThanks;
      response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      response.end(
        `<!doctype html><html lang="en"><title>Shop</title><h1>Shop page ${request.url?.replace(/[<>&"]/g, "")}</h1></html>`,
      );
    });
    await new Promise<void>((resolve) => shopServer.listen(0, "127.0.0.1", resolve));
    shopOrigin = `http://127.0.0.1:${(shopServer.address() as { port: number }).port}`;

    await expectJson(
      await stack.partnerFetch("/v1/branding", {
        method: "PATCH",
        json: {
          displayName: "Harbour Goods",
          accentColor: "#1a7f37",
          supportUrl: `${shopOrigin}/help`,
          supportEmail: "help@harbour.example",
        },
      }),
      200,
    );
    const logo =
      '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 40"><rect width="40" height="40" rx="8" fill="#1a7f37"/>' +
      '<path d="M8 26 L20 12 L32 26 Z" fill="#ffffff"/></svg>';
    const uploaded = await fetch(`${stack.ponder.baseUrl}/v1/branding/logo`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${stack.local.partner.apiKey}`, "Content-Type": "image/svg+xml" },
      body: logo,
    });
    await expectJson(uploaded, 200);

    chromium = await launchChromium("hosted", WIDE);
    context = chromium.context;
    context.on("request", (request) => requests.push(request));
  }, 240_000);

  afterAll(async () => {
    releaseThanks();
    // The client token never reached a URL, a Referer or the service's log.
    for (const token of tokens) {
      for (const request of requests) {
        expect(request.url()).not.toContain(token);
        expect(request.headers().referer ?? "").not.toContain(token);
      }
      expect(stack.ponder.output()).not.toContain(token);
    }
    // No request left our origin, except the navigations to the shop's own pages.
    const foreign = requests
      .map((request) => new URL(request.url()))
      .filter((url) => url.origin !== stack.ponder.baseUrl && url.origin !== shopOrigin);
    expect(foreign.map(String)).toEqual([]);
    for (const request of requests.filter((r) => new URL(r.url()).origin === shopOrigin)) {
      expect(request.isNavigationRequest()).toBe(true);
    }
    await chromium?.close();
    await closeServer(shopServer);
  });

  /** Screenshots at 1280 and 390 px; at 390 nothing may overflow sideways; axe finds no violation at either. */
  async function captureState(page: Page, name: string) {
    for (const [label, viewport] of [
      ["1280", WIDE],
      ["390", PHONE],
    ] as const) {
      await page.setViewportSize(viewport);
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined))));
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${label}.png`), fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, `${name} at ${label} px overflows sideways`).toBeLessThanOrEqual(0);
      const violations = await axeFindings(page, join(ARTIFACTS, `axe-${name}-${label}.json`), { blockingOnly: false });
      expect(violations, `${name} at ${label} px: accessibility violations`).toEqual([]);
    }
    await page.setViewportSize(WIDE);
  }

  async function openSession(overrides: Record<string, unknown> = {}) {
    const session = (await createSession(stack, {
      shippingRequired: false,
      totalPriceUsdc: "25000000",
      lineItems: [
        { externalProductId: "tee", name: "Blue organic tee", quantity: 1, unitPriceUsdc: "20000000" },
        { externalProductId: "socks", name: "Wool socks", quantity: 2, unitPriceUsdc: "2500000" },
      ],
      successUrl: `${shopOrigin}/thanks?session={CHECKOUT_SESSION_ID}`,
      cancelUrl: `${shopOrigin}/cart`,
      customer: { email: "ada@example.com", name: "Ada Lovelace" },
      ...overrides,
    })) as Awaited<ReturnType<typeof createSession>> & { url: string };
    tokens.push(session.clientToken);
    const page = await context.newPage();
    await page.goto(session.url);
    return { session, page };
  }

  const state = (page: Page, name: string) => page.waitForSelector(`#checkout[data-state="${name}"]`, { timeout: 30_000 });

  describe("the standalone hosted checkout", () => {
    it("is opened from its url, paid with the test button, shows the pending state and lands on successUrl", async () => {
      const { session, page } = await openSession();
      // The fragment is gone from the address bar (and the history entry).
      await state(page, "awaiting_details");
      expect(page.url()).toBe(`${stack.ponder.baseUrl}/checkout/${session.id}`);
      expect(await page.evaluate(() => location.hash)).toBe("");
      await expect.poll(() => page.locator("#merchant-name").textContent()).toBe("Harbour Goods");
      // The logo has no box until its image arrived (a second request): wait for it, do not race it.
      await expect.poll(() => page.locator("#merchant-logo").isVisible(), { timeout: 60_000 }).toBe(true);
      expect(await page.locator("#back-link").getAttribute("href")).toBe(`${shopOrigin}/cart`);
      expect(await page.locator("#back-link").textContent()).toBe("Back to Harbour Goods");
      expect(await page.locator("#line-items").textContent()).toContain("2 × Wool socks");
      expect(await page.locator("#order-total").textContent()).toBe("25.00 USDC");
      expect(await page.locator("#email").inputValue()).toBe("ada@example.com");
      await captureState(page, "01-details");

      await page.getByRole("button", { name: "Continue to payment" }).click();
      await state(page, "awaiting_payment");
      await page.locator("#qr svg").waitFor();
      expect(await page.locator("#amount").textContent()).toBe(
        `${BigInt(session.payment.amount) / 1_000_000n}.${(BigInt(session.payment.amount) % 1_000_000n).toString().padStart(6, "0")}`,
      );
      await page.setViewportSize(PHONE);
      // Mobile first: the wallet link is the primary action, above the QR code.
      const link = await page.locator("#wallet-link").boundingBox();
      const qr = await page.locator("#qr").boundingBox();
      expect(link!.y + link!.height).toBeLessThanOrEqual(qr!.y);
      expect(link!.width).toBeGreaterThan(300);
      // The address wraps between groups of four, each group whole.
      const groups = await page.locator("#recipient-groups .group").allTextContents();
      expect(groups.join("")).toBe(session.payment.recipient);
      await captureState(page, "02-awaiting-payment");

      await page.getByRole("button", { name: "Pay with a test account" }).click();
      await state(page, "payment_pending");
      expect(await page.locator("#pending-message").textContent()).toBe("Payment seen, 1 of 2 confirmations.");
      expect(await page.locator("#payment-step").isHidden()).toBe(true);
      expect(await page.locator("#wallet-link").isVisible()).toBe(false);
      expect(await page.locator("#pending-hash").textContent()).toMatch(/^0x[0-9a-f]{64}$/);
      await captureState(page, "03-payment-pending");

      // The next block confirms it: the confirmation, then the shop's success page.
      await stack.testClient.mine({ blocks: 1 });
      await state(page, "settled");
      expect(await page.locator("#success-link").getAttribute("href")).toBe(`${shopOrigin}/thanks?session=${session.id}`);
      await captureState(page, "04-settled");
      releaseThanks();
      await page.waitForURL(`${shopOrigin}/thanks?session=${session.id}`, { timeout: 30_000 });
      expect((await readOrder(stack, session.orderId)).status).toBe("paid");
      await page.close();
    }, 180_000);

    it("explains a wrong amount; the partner sees it linked to the session and attaches it", async () => {
      const { session, page } = await openSession({ customer: undefined });
      await state(page, "awaiting_details");
      await page.setViewportSize(PHONE);
      await page.getByLabel(/Email/).fill("grace@example.com");
      await page.getByRole("button", { name: "Continue to payment" }).click();
      await state(page, "awaiting_payment");
      // The customer's exchange kept a 1 USDC fee (`npm run pay -- <id> --amount …` does the same).
      const short = BigInt(session.payment.amount) - 1_000_000n;
      const sent = await expectJson(
        await stack.partnerFetch(`/v1/checkout/sessions/${session.id}/test-payment`, {
          method: "POST",
          json: { amount: short.toString() },
        }),
        200,
      );
      expect(sent.submission.problem).toMatchObject({ code: "wrong_amount", recordedForShop: true });
      await state(page, "wrong_amount");
      const explanation = await page.locator("#mismatch").textContent();
      expect(explanation).toContain(`We received ${short / 1_000_000n}.${(short % 1_000_000n).toString().padStart(6, "0")} USDC`);
      expect(explanation).toContain("Your money is not lost");
      expect(explanation).toContain("Harbour Goods, which has been told");
      // The exact amount is still there to send.
      expect(await page.locator("#wallet-link").isVisible()).toBe(true);
      await captureState(page, "05-wrong-amount");

      const listed = await expectJson(await stack.partnerFetch("/v1/payments?status=unresolved"), 200);
      const payment = listed.data.find((row: { sessionId: string }) => row.sessionId === session.id);
      expect(payment).toMatchObject({ orderId: session.orderId, expectedAmount: session.payment.amount, reason: "underpaid" });
      await expectJson(
        await stack.partnerFetch(`/v1/payments/${payment.chainId}/${payment.transactionHash}/${payment.logIndex}/attach`, {
          method: "POST",
          json: { orderId: session.orderId },
        }),
        200,
      );
      await state(page, "settled");
      const order = await readOrder(stack, session.orderId);
      expect(order.amountPaid).toBe(short.toString());
      await page.close();
    }, 180_000);

    it("offers Start again when the session expired, and support contacts", async () => {
      const { session, page } = await openSession();
      await state(page, "awaiting_details");
      // The shop opened a new session for the order: this one is closed.
      await createSession(stack, {
        shippingRequired: false,
        externalOrderId: session.externalOrderId,
        idempotencyKey: `again-${session.id}`,
      });
      await state(page, "expired");
      expect(await page.getByRole("link", { name: "Start again" }).getAttribute("href")).toBe(`${shopOrigin}/cart`);
      expect(await page.locator("#support-email").textContent()).toBe("help@harbour.example");
      await captureState(page, "06-expired");
      await page.close();
    }, 120_000);

    it("says what to do when the link is broken", async () => {
      const session = await createSession(stack, { shippingRequired: false });
      const page = await context.newPage();
      await page.goto(`${stack.ponder.baseUrl}/checkout/${session.id}#ct=not-the-token`);
      await state(page, "error");
      expect(page.url()).toBe(`${stack.ponder.baseUrl}/checkout/${session.id}`);
      await captureState(page, "07-invalid-link");
      await page.goto(`${stack.ponder.baseUrl}/checkout/${session.id}`);
      await state(page, "error");
      expect(await page.locator("#closed-message").textContent()).toContain("Open this checkout from the link");
      await page.close();
    }, 60_000);
  });
});
