import { join } from "node:path";
import { type Address, encodeFunctionData, erc20Abi, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { deployTestUsdc } from "../local/deploy.js";
import {
  createSession,
  outboxEvents,
  publicPost,
  readOrder,
  readSession,
  sessionBody,
  submitHash,
} from "./support/checkout-helpers.js";
import { adminWallet, api, expectJson, signIn } from "./support/portal-client.js";
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

/** Everything a rejected submission must leave untouched. */
async function snapshot(sessionId: string) {
  const session = await store.selectFrom("checkout_session").selectAll().where("id", "=", sessionId).executeTakeFirstOrThrow();
  const payments = await store.selectFrom("payment").selectAll().where("session_id", "=", sessionId).execute();
  const events = await store.selectFrom("event").select("id").execute();
  return { status: session.status, updated: session.updated_at, payments: payments.length, events: events.length };
}

async function expectRejected(response: Response, status: number, code: string, reason: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(await response.json()).toMatchObject({ code, reason });
}

/** Waits until the worker has looked at a transfer (settled it or filed it as unresolved). */
function recorded(hash: Hex) {
  return waitFor(
    async () =>
      (await store.selectFrom("payment").selectAll().where("transaction_hash", "=", hash).executeTakeFirst()) ?? undefined,
    {
      what: `payment row for ${hash}`,
    },
  );
}

describe("attacks on settlement: each fails and changes nothing", () => {
  it("another session submitting a victim's transaction hash", async () => {
    const victim = await createSession(stack);
    const attacker = await createSession(stack);
    expect(attacker.payment.amount).not.toBe(victim.payment.amount);
    const paid = await stack.payUsdc({ from: 1, to: victim.payment.recipient, amount: BigInt(victim.payment.amount) });
    await waitFor(async () => ((await readSession(stack, victim.id)).status === "settled" ? true : undefined));
    const before = await snapshot(attacker.id);
    await expectRejected(await submitHash(stack, attacker.clientToken, paid.hash), 422, "replay", "replay");
    expect(await snapshot(attacker.id)).toEqual(before);
  });

  it("the same transfer submitted twice to one session credits it once", async () => {
    const session = await createSession(stack, { certificate: { enabled: false } });
    const paid = await stack.payUsdc({ from: 2, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await recorded(paid.hash);
    const first = await (await submitHash(stack, session.clientToken, paid.hash)).json();
    const second = await (await submitHash(stack, session.clientToken, paid.hash)).json();
    expect([first.status, second.status]).toEqual(["settled", "settled"]);
    const settledEvents = (await outboxEvents(stack, store)).filter(
      (event) => event.type === "purchase.settled" && event.data.orderId === session.orderId,
    );
    expect(settledEvents).toHaveLength(1);
  });

  it("a look-alike token contract emitting an identical Transfer", async () => {
    const session = await createSession(stack);
    const fake = await deployTestUsdc({
      rpcUrl: stack.local.rpcUrl,
      chainId: stack.local.chainId,
      deployerPrivateKey: stack.local.accounts[8]!.privateKey as Hex,
    });
    const owner = stack.wallet(8);
    await stack.publicClient.waitForTransactionReceipt({
      hash: await owner.writeContract({
        address: fake,
        abi: [
          {
            type: "function",
            name: "mint",
            stateMutability: "nonpayable",
            inputs: [{ type: "address" }, { type: "uint256" }],
            outputs: [],
          },
        ],
        functionName: "mint",
        args: [owner.account!.address, 10n ** 12n],
        chain: stack.chain,
        account: owner.account!,
      }),
    });
    const paid = await stack.payUsdc({
      from: 8,
      to: session.payment.recipient,
      amount: BigInt(session.payment.amount),
      token: fake,
    });
    const before = await snapshot(session.id);
    await expectRejected(await submitHash(stack, session.clientToken, paid.hash), 422, "wrong_token", "wrong_token");
    expect(await snapshot(session.id)).toEqual(before);
  });

  it("a reverted transaction", async () => {
    const session = await createSession(stack);
    const wallet = stack.wallet(3);
    // More than the account holds: the transfer reverts on chain (gas is fixed so the node does not refuse it up front).
    const hash = await wallet.sendTransaction({
      to: stack.local.contracts.usdc as Address,
      data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [session.payment.recipient, 10n ** 15n] }),
      gas: 100_000n,
      chain: stack.chain,
      account: wallet.account!,
    });
    const receipt = await stack.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("reverted");
    const before = await snapshot(session.id);
    await expectRejected(await submitHash(stack, session.clientToken, hash), 422, "reverted", "reverted");
    expect(await snapshot(session.id)).toEqual(before);
  });

  it("a transfer to another recipient", async () => {
    const session = await createSession(stack);
    const paid = await stack.payUsdc({
      from: 3,
      to: stack.local.accounts[9]!.address as Address,
      amount: BigInt(session.payment.amount),
    });
    const before = await snapshot(session.id);
    await expectRejected(await submitHash(stack, session.clientToken, paid.hash), 422, "wrong_recipient", "wrong_recipient");
    expect(await snapshot(session.id)).toEqual(before);
  });

  it("one base unit short and one base unit over, which become unresolved payments", async () => {
    // A price no other session of this file has: one base unit off could otherwise be
    // another open session's exact amount (offsets are random in 1..9999), and pay it.
    const session = await createSession(stack, { totalPriceUsdc: "41000000" });
    for (const delta of [-1n, 1n]) {
      const paid = await stack.payUsdc({
        from: 4,
        to: session.payment.recipient,
        amount: BigInt(session.payment.amount) + delta,
      });
      const payment = await recorded(paid.hash);
      expect(payment).toMatchObject({ status: "unresolved", reason: "unmatched", session_id: null });
      const before = await snapshot(session.id);
      await expectRejected(await submitHash(stack, session.clientToken, paid.hash), 422, "wrong_amount", "wrong_amount");
      // docs/hosted-checkout.md: the session stays as it was, but the submitted transfer is now
      // linked to it (underpaid/overpaid) and reported again with the session's fields.
      const after = await snapshot(session.id);
      expect(after).toEqual({ ...before, payments: before.payments + 1, events: before.events + 1 });
      const linked = await store
        .selectFrom("payment")
        .selectAll()
        .where("transaction_hash", "=", paid.hash.toLowerCase())
        .executeTakeFirstOrThrow();
      expect(linked).toMatchObject({
        status: "unresolved",
        reason: delta < 0n ? "underpaid" : "overpaid",
        session_id: session.id,
      });
    }
    expect((await readSession(stack, session.id)).status).toBe("awaiting_payment");
    const unresolved = await (await stack.partnerFetch("/v1/payments?status=unresolved&limit=500")).json();
    const amounts = unresolved.data.map((payment: { amount: string }) => payment.amount);
    expect(amounts).toContain((BigInt(session.payment.amount) - 1n).toString());
    expect(amounts).toContain((BigInt(session.payment.amount) + 1n).toString());
    const events = (await outboxEvents(stack, store)).filter((event) => event.type === "payment.unresolved");
    expect(events.some((event) => event.data.amount === (BigInt(session.payment.amount) + 1n).toString())).toBe(true);
  });

  it("the same idempotency key with a different body", async () => {
    const body = sessionBody();
    const first = await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: body });
    expect(first.status).toBe(201);
    const created = await first.json();
    const replay = await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: body });
    expect(replay.status).toBe(200);
    const replayed = await replay.json();
    // A replay reissues the client token (tokens are stored hashed), so its `url` carries the new one.
    expect({ ...replayed, clientToken: undefined, url: undefined }).toEqual({
      ...created,
      clientToken: undefined,
      url: undefined,
    });
    expect(replayed.url).toBe(created.url.replace(`#ct=${created.clientToken}`, `#ct=${replayed.clientToken}`));
    const sessionsBefore = await store.selectFrom("checkout_session").select("id").execute();
    const conflict = await stack.partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: { ...body, totalPriceUsdc: "26000000" },
    });
    expect(conflict.status).toBe(409);
    expect((await conflict.json()).code).toBe("idempotency_conflict");
    expect(await store.selectFrom("checkout_session").select("id").execute()).toHaveLength(sessionsBefore.length);
  });

  it("a client token of session A used on session B", async () => {
    const a = await createSession(stack);
    const b = await createSession(stack);
    const before = await snapshot(b.id);
    const validate = await publicPost(stack, `/v1/public/checkout/sessions/${b.id}/validate`, { clientToken: a.clientToken });
    expect(validate.status).toBe(401);
    expect((await validate.json()).code).toBe("invalid_client_token");
    const details = await publicPost(stack, `/v1/public/checkout/sessions/${b.id}/details`, {
      clientToken: a.clientToken,
      contact: { email: "mallory@example.com" },
      delivery: { name: "M", line1: "x", city: "y", postalCode: "1", country: "PT" },
    });
    expect(details.status).toBe(401);
    expect(await snapshot(b.id)).toEqual(before);
  });

  it("a claim whose mint is sent from a wallet other than the voucher's buyer", async () => {
    const session = await createSession(stack);
    await stack.payUsdc({ from: 5, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined));
    const claim = await (
      await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/claim`, {
        clientToken: session.clientToken,
        walletAddress: stack.local.accounts[5]!.address,
      })
    ).json();
    const thief = stack.wallet(6);
    const hash = await thief.sendTransaction({
      to: claim.transaction.to,
      data: claim.transaction.data,
      gas: 300_000n,
      chain: stack.chain,
      account: thief.account!,
    });
    expect((await stack.publicClient.waitForTransactionReceipt({ hash })).status).toBe("reverted");
    // Give the indexer and the mint confirmer time to see anything there might be.
    const marker = await stack.payUsdc({ from: 6, to: session.payment.recipient, amount: 1n });
    await recorded(marker.hash);
    const order = await readOrder(stack, session.orderId);
    expect(order.certificate.status).toBe("voucher_issued");
    expect(
      (await outboxEvents(stack, store)).some(
        (event) => event.type === "certificate.minted" && event.data.orderId === session.orderId,
      ),
    ).toBe(false);
  });

  it("an ineligible claim gets a clear problem", async () => {
    const session = await createSession(stack);
    const response = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: stack.local.accounts[5]!.address,
    });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: "certificate_not_available", reason: "not_settled" });
  });

  it("rejects malformed creation input with problem+json and creates nothing", async () => {
    const before = await store.selectFrom("checkout_session").select("id").execute();
    for (const bad of [
      { totalPriceUsdc: "25.5" },
      { totalPriceUsdc: "-1" },
      { totalPriceUsdc: 25000000 },
      { paymentMethod: "card" },
      { checkoutMode: "redirect" },
      { expiresInSeconds: 60 },
      { expiresInSeconds: 90_000 },
      { quantity: 0 },
      { certificate: { enabled: "yes" } },
    ]) {
      const response = await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: sessionBody(bad) });
      expect(response.status, JSON.stringify(bad)).toBe(400);
      expect((await response.json()).code).toBe("invalid_request");
    }
    expect(await store.selectFrom("checkout_session").select("id").execute()).toHaveLength(before.length);
  });
});

describe("partner isolation", () => {
  it("another partner's key reads, fulfils and lists nothing of this partner", async () => {
    const partner = await createPartner(store, { name: "Other shop" });
    const { apiKey } = await issueApiKey(store, { partnerId: partner.id, mode: "test" });
    const other = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      stack.partnerFetch(path, { ...init, headers: { Authorization: `Bearer ${apiKey}` } });

    const session = await createSession(stack, { certificate: { enabled: false } });
    const paid = await stack.payUsdc({ from: 7, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined));

    expect((await other(`/v1/checkout/sessions/${session.id}`)).status).toBe(404);
    expect((await other(`/v1/orders/${session.orderId}`)).status).toBe(404);
    const fulfil = await other(`/v1/orders/${session.orderId}/fulfilment`, {
      method: "POST",
      json: { fulfilmentReference: "x", idempotencyKey: "x" },
    });
    expect(fulfil.status).toBe(404);
    expect((await readOrder(stack, session.orderId)).status).toBe("paid");
    expect((await (await other(`/v1/transfers?txHash=${paid.hash}`)).json()).data).toEqual([]);
    expect((await (await other("/v1/payments")).json()).data).toEqual([]);
    // The other partner has no payment address, so it cannot open a session either.
    const create = await other("/v1/checkout/sessions", { method: "POST", json: sessionBody() });
    expect(create.status).toBe(422);
    expect((await create.json()).code).toBe("no_payment_address");
  });

  it("limits receipt look-ups for unknown hashes per session", async () => {
    const session = await createSession(stack);
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const response = await submitHash(stack, session.clientToken, `0x${i.toString(16).padStart(64, "f")}` as Hex);
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 10).every((status) => status === 404)).toBe(true);
    expect(statuses[10]).toBe(429);
    // A known hash is still answered from the index.
    const paid = await stack.payUsdc({ from: 7, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await recorded(paid.hash);
    expect((await (await submitHash(stack, session.clientToken, paid.hash)).json()).status).toBe("settled");
  });
});

describe("unresolved payments resolved by an administrator", () => {
  it("attaches a short payment to its order, which settles it, audited; it cannot refund one (the partner refunds)", async () => {
    const admin = await signIn(stack, "admin", adminWallet(stack));
    // A price of its own, as above: 500 base units short must match no other open session.
    const session = await createSession(stack, { certificate: { enabled: false }, totalPriceUsdc: "37000000" });
    const short = await stack.payUsdc({ from: 9, to: session.payment.recipient, amount: BigInt(session.payment.amount) - 500n });
    const stray = await stack.payUsdc({ from: 9, to: session.payment.recipient, amount: 1_234n });
    await recorded(short.hash);
    await recorded(stray.hash);

    const unresolved = await expectJson(
      await api(stack, "GET", "/api/admin/payments?status=unresolved&limit=200", { token: admin }),
      200,
    );
    expect(unresolved.data.map((payment: { transactionHash: string }) => payment.transactionHash)).toEqual(
      expect.arrayContaining([short.hash, stray.hash]),
    );

    const path = (hash: Hex, action: string) => `/api/admin/payments/31337/${hash}/0/${action}`;
    // The partner's key is no admin credential.
    expect(
      (await stack.partnerFetch(path(short.hash, "attach"), { method: "POST", json: { orderId: session.orderId } })).status,
    ).toBe(401);
    await expectJson(
      await api(stack, "POST", path(short.hash, "attach"), {
        token: admin,
        json: { orderId: session.orderId, note: "customer underpaid by 0.0005" },
      }),
      200,
    );
    const order = await readOrder(stack, session.orderId);
    expect(order).toMatchObject({ status: "paid", amountPaid: (BigInt(session.payment.amount) - 500n).toString() });
    const settled = (await outboxEvents(stack, store)).filter(
      (event) => event.type === "purchase.settled" && event.data.orderId === session.orderId,
    );
    expect(settled).toHaveLength(1);
    expect(settled[0]!.data).toMatchObject({ resolution: "attached", transactionHash: short.hash });
    // Attaching twice is refused and changes nothing.
    expect(
      (await api(stack, "POST", path(short.hash, "attach"), { token: admin, json: { orderId: session.orderId } })).status,
    ).toBe(409);

    // A refund is the partner's (docs/console.md): the admin has no refund route, and asking changes nothing.
    expect((await api(stack, "POST", path(stray.hash, "refund"), { token: admin, json: { note: "not ours" } })).status).toBe(404);
    expect(
      await store.selectFrom("refund").select("id").where("payment_transaction_hash", "=", stray.hash.toLowerCase()).execute(),
    ).toEqual([]);

    const audit = await expectJson(await api(stack, "GET", "/api/admin/audit-log?limit=50", { token: admin }), 200);
    const actions = audit.data.map((entry: { action: string; target: { id: string } }) => `${entry.action} ${entry.target.id}`);
    expect(actions).toEqual(expect.arrayContaining([`payment.attach 31337:${short.hash}:0`]));
  });
});

describe("payment references under concurrency", () => {
  it("hundreds of sessions created at once for the same total all display distinct amounts", async () => {
    const count = 300;
    const sessions = await Promise.all(Array.from({ length: count }, () => createSession(stack, { totalPriceUsdc: "9990000" })));
    const amounts = new Set(sessions.map((session) => `${session.payment.recipient}:${session.payment.amount}`));
    expect(amounts.size).toBe(count);
    for (const session of sessions) {
      const offset = BigInt(session.payment.amount) - 9_990_000n;
      expect(offset >= 1n && offset <= 9_999n).toBe(true);
    }
  });
});
