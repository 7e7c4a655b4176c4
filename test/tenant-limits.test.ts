import { randomBytes, randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSession, outboxEvents, publicPost, readOrder, sessionBody, submitHash } from "./support/checkout-helpers.js";
import { adminWallet, api, expectJson, openOffering, portalWallet, registerIssuer, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Hostile tenants and anonymous visitors against the limits of docs/security.md.
// Requests that test a per-IP limit name their own client with X-Forwarded-For
// (TRUST_PROXY), so the limits of one test never spill into another.
let stack: TestStack;
let store: Store;

const SIGN_IN_LIMIT = 20;
const LOOKUP_LIMIT = 5;

beforeAll(async () => {
  stack = await startTestStack({
    env: { TRUST_PROXY: "true", SIGN_IN_RATE_LIMIT: String(SIGN_IN_LIMIT), LOOKUP_RATE_LIMIT: String(LOOKUP_LIMIT) },
  });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

/** docs/security.md: an unused session's reference is its own for an hour after it ended. */
const UNUSED_REFERENCE_GRACE_MS = 3_600_000;

let nextClient = 1;
/** A client address of its own (TEST-NET-2), for one request or one test. */
const newClient = () => `198.51.${Math.floor(nextClient / 250)}.${(nextClient++ % 250) + 1}`;

async function expectProblem(response: Response, status: number, code?: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  const body = JSON.parse(text);
  expect(body.status).toBe(status);
  if (code !== undefined) expect(body.code).toBe(code);
  return body;
}

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("cursors", () => {
  it("answers 400 invalid_cursor to crafted /v1/transfers cursors, never 500", async () => {
    const crafted = [
      cursorOf({ c: 1e300, b: "1", l: 0 }),
      cursorOf({ c: 2 ** 53, b: "1", l: 0 }),
      cursorOf({ c: 2 ** 31, b: "1", l: 0 }),
      cursorOf({ c: 31337, b: "99999999999999999999999", l: 0 }),
      cursorOf({ c: 31337, b: "18446744073709551616", l: 0 }),
      cursorOf({ c: 31337, b: "1", l: 2 ** 40 }),
      cursorOf({ c: 31337, b: "1", l: -1 }),
      cursorOf({ c: "31337", b: "1", l: 0 }),
      cursorOf([1, 2, 3]),
      "not a cursor!",
      "%00",
      "A".repeat(499),
    ];
    for (const cursor of crafted) {
      const response = await stack.partnerFetch(`/v1/transfers?cursor=${encodeURIComponent(cursor)}`);
      await expectProblem(response, 400, "invalid_cursor");
    }
    // The cursor the service issues still works.
    const page = await expectJson(await stack.partnerFetch("/v1/transfers?limit=1"), 200);
    if (page.nextCursor !== null) expect((await stack.partnerFetch(`/v1/transfers?cursor=${page.nextCursor}`)).status).toBe(200);
  });
});

describe("body limits", () => {
  it("refuses oversized bodies on unauthenticated and partner routes with 413 problem+json", async () => {
    const session = await createSession(stack);
    const big = JSON.stringify({ clientToken: session.clientToken, padding: "x".repeat(20 * 1024) });
    await expectProblem(
      await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/validate`, JSON.parse(big)),
      413,
      "payload_too_large",
    );

    // A body with no declared length is cut off as soon as it passes the limit (16 KiB here): the
    // service answers 413 without reading the rest, then drops the connection. Four times the limit
    // is sent, all of which fits in the sockets' buffers, so the client is done writing when the
    // connection drops and reads the answer (a client still writing would see only the reset).
    const streamed = await streamUntilAnswered(`${stack.ponder.baseUrl}/api/investor/auth/challenge`, 64 * 1024);
    expect(streamed.status).toBe(413);
    expect(streamed.contentType).toContain("application/problem+json");
    expect(JSON.parse(streamed.body)).toMatchObject({ status: 413, code: "payload_too_large" });

    // A declared body over the limit but under the drain cap (8 MiB) is read and thrown away
    // before the answer, so an ordinary client still writing it reads the 413 (not a reset)
    // and its connection stays usable.
    const partner = await stack.partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: { ...sessionBody(), productName: "y".repeat(2 * 1024 * 1024) },
    });
    await expectProblem(partner, 413, "payload_too_large");
    expect(partner.headers.get("connection")).not.toBe("close");
    // A declared body over the drain cap is refused on its headers alone: the unread body makes
    // the connection unusable, and the answer says so, so a keep-alive client opens a new one
    // instead of resetting its next request.
    const huge = await declareAndWait(`${stack.ponder.baseUrl}/v1/checkout/sessions`, 64 * 1024 * 1024, {
      Authorization: `Bearer ${stack.local.partner.apiKey}`,
    });
    expect(huge.status).toBe(413);
    expect(huge.connection).toBe("close");
    expect(JSON.parse(huge.body)).toMatchObject({ status: 413, code: "payload_too_large" });
    // An ordinary body still goes through.
    expect(
      (await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/validate`, { clientToken: session.clientToken }))
        .status,
    ).toBe(200);
  });
});

describe("rate limits", () => {
  it("answers 429 problem+json with Retry-After to a client that floods sign-in challenges", async () => {
    const client = newClient();
    const wallet = portalWallet();
    const ask = (from: string) =>
      api(stack, "POST", "/api/investor/auth/challenge", {
        json: { address: wallet.address },
        headers: { "X-Forwarded-For": from },
      });
    for (let i = 0; i < SIGN_IN_LIMIT; i++) expect((await ask(client)).status).toBe(200);
    const limited = await ask(client);
    await expectProblem(limited, 429, "rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // The other portals share the allowance; another client is not affected.
    await expectProblem(
      await api(stack, "POST", "/api/admin/auth/challenge", {
        json: { address: wallet.address },
        headers: { "X-Forwarded-For": client },
      }),
      429,
      "rate_limited",
    );
    expect((await ask(newClient())).status).toBe(200);
  });

  it("limits transaction look-ups (hash submissions) per client", async () => {
    const session = await createSession(stack);
    const client = newClient();
    const lookUp = () =>
      fetch(`${stack.ponder.baseUrl}/v1/public/checkout/payments`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Forwarded-For": client },
        body: JSON.stringify({ clientToken: session.clientToken, transactionHash: `0x${randomBytes(32).toString("hex")}` }),
      });
    for (let i = 0; i < LOOKUP_LIMIT; i++) {
      const response = await lookUp();
      expect(response.status).not.toBe(429);
      expect(response.status).toBeLessThan(500);
      await response.text();
    }
    const limited = await lookUp();
    await expectProblem(limited, 429, "rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("fuzz of the unauthenticated routes", () => {
  it("answers every malformed body, odd path and odd query with problem+json, never a 500", async () => {
    const session = await createSession(stack);
    const posts = [
      `/v1/public/checkout/sessions/${session.id}/validate`,
      `/v1/public/checkout/sessions/${session.id}/details`,
      `/v1/public/checkout/sessions/${session.id}/claim`,
      "/v1/public/checkout/sessions/cs_nope/validate",
      "/v1/public/checkout/payments",
      "/api/investor/auth/challenge",
      "/api/issuer/auth/verify",
      "/api/admin/auth/verify",
      "/api/rwa/checkout",
      "/api/rwa/settlements/wallet",
    ];
    const bodies: (string | undefined)[] = [
      undefined,
      "",
      "{",
      "null",
      "[]",
      "42",
      '"string"',
      "{}",
      JSON.stringify({ clientToken: null, transactionHash: 7 }),
      JSON.stringify({ clientToken: session.clientToken, transactionHash: `0x${"g".repeat(64)}` }),
      JSON.stringify({ clientToken: session.clientToken, walletAddress: `0x${"0".repeat(39)}` }),
      JSON.stringify({ clientToken: `ct_${"a".repeat(5000)}` }),
      JSON.stringify({ address: "0xdead", chainId: 1e300 }),
      JSON.stringify({ address: "0x0000000000000000000000000000000000000001", chainId: -1 }),
      JSON.stringify({ message: "x".repeat(5000), signature: "0x00" }),
      JSON.stringify({ __proto__: { admin: true }, constructor: { prototype: { x: 1 } } }),
      `${"[".repeat(5000)}${"]".repeat(5000)}`,
      JSON.stringify({ clientToken: session.clientToken, contact: { email: "\u0000\uffff\ud800" }, delivery: [] }),
    ];
    let requests = 0;
    let accepted = 0;
    for (const path of posts) {
      for (const body of bodies) {
        const response = await fetch(`${stack.ponder.baseUrl}${path}`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Forwarded-For": newClient() },
          body,
        });
        requests++;
        const text = await response.text();
        expect(response.status, `${path} ${body?.slice(0, 60)} → ${text.slice(0, 200)}`).toBeLessThan(500);
        // A body that carries the session's real token may be accepted despite its extra fields.
        if (response.status >= 400) expect(response.headers.get("content-type"), path).toContain("application/problem+json");
        else accepted++;
      }
    }
    const gets = [
      "/api/rwa/verify/certificates/99999999999999999999999999999999999999999999999999999999999999999999999999999",
      "/api/rwa/verify/certificates/-1",
      "/api/rwa/verify/transactions/0x1234",
      "/api/rwa/verify/wallets/not-a-wallet",
      `/api/rwa/offerings?cursor=${cursorOf({ id: 1e300 })}`,
      "/api/rwa/offerings?cursor=%FF%FE",
      "/api/rwa/offerings?limit=1e300",
      "/api/rwa/offerings/off_%00",
      `/v1/transfers?cursor=${cursorOf({ c: 1e300 })}`,
      "/v1/events?after=evt_nope",
      "/api/admin/audit-log?cursor=AAAA",
    ];
    for (const path of gets) {
      const response = await fetch(`${stack.ponder.baseUrl}${path}`, { headers: { "X-Forwarded-For": newClient() } });
      requests++;
      const text = await response.text();
      expect(response.status, `${path} → ${text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(response.status, `${path} → ${text.slice(0, 200)}`).toBeLessThan(500);
      expect(response.headers.get("content-type"), path).toContain("application/problem+json");
    }
    expect(accepted).toBeLessThan(requests / 10);
    console.log(
      `fuzz: ${requests} odd requests, ${requests - accepted} answered 4xx problem+json, ${accepted} accepted, none 5xx`,
    );
  });
});

describe("mint confirmation is not starved", () => {
  it("confirms a mint while 600 claimed vouchers of another partner are never minted", async () => {
    // 600 orders whose vouchers were claimed and never minted (as many settled
    // sub-cent purchases would leave behind), written straight to the store.
    const now = Date.now();
    const contract = stack.local.contracts.certificate.toLowerCase();
    await store.insertInto("partner").values({ id: "ptr_hoarder", name: "Hoarder", created_at: now }).execute();
    for (let batch = 0; batch < 6; batch++) {
      const orders = Array.from({ length: 100 }, () => {
        const purchaseId = `0x${randomBytes(32).toString("hex")}`;
        // Sorted ahead of any real order id, so an unordered or id-ordered scan meets them first.
        return { id: `ord_0${randomUUID().replaceAll("-", "")}`, purchaseId };
      });
      await store
        .insertInto("orders")
        .values(
          orders.map((order) => ({
            id: order.id,
            partner_id: "ptr_hoarder",
            external_order_id: order.id,
            purchase_id: order.purchaseId,
            status: "paid" as const,
            settled_session_id: null,
            fulfilment_reference: null,
            fulfilment_idempotency_key: null,
            fulfilled_at: null,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      await store
        .insertInto("certificate")
        .values(
          orders.map((order) => ({
            order_id: order.id,
            purchase_id: order.purchaseId,
            status: "voucher_issued" as const,
            chain_id: 31337,
            contract_address: contract,
            buyer: null,
            token_id: BigInt(order.purchaseId).toString(),
            voucher_deadline: Math.floor(now / 1000) + 3600,
            mint_transaction_hash: null,
            mint_block_number: null,
            minted_at: null,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
    }

    const session = await createSession(stack);
    await stack.payUsdc({ from: 3, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await waitFor(async () => ((await readOrder(stack, session.orderId)).status === "paid" ? true : undefined), {
      what: "the order paid",
    });
    const buyer = stack.wallet(3);
    const claim = await expectJson(
      await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/claim`, {
        clientToken: session.clientToken,
        walletAddress: buyer.account!.address,
      }),
      200,
    );
    const mintHash = await buyer.sendTransaction({
      to: claim.transaction.to as Address,
      data: claim.transaction.data as Hex,
      chain: stack.chain,
      account: buyer.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash: mintHash });
    const minted = await waitFor(
      async () => {
        const order = await readOrder(stack, session.orderId);
        return order.certificate.status === "minted" ? order : undefined;
      },
      { timeoutMs: 30_000, what: "the certificate minted" },
    );
    expect(minted.certificate.mintTransactionHash).toBe(mintHash);
    const events = (await outboxEvents(stack, store)).filter(
      (event) => event.type === "certificate.minted" && event.data.orderId === session.orderId,
    );
    expect(events).toHaveLength(1);
  }, 60_000);
});

describe("RWA reservations by free wallets", () => {
  it("caps what wallets without KYC can hold unpaid, and how many open purchases one wallet holds", async () => {
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const { token: issuerToken } = await registerIssuer(stack, adminToken, portalWallet(), "Harbour Capital");
    const offeringId = await openOffering(
      stack,
      { issuer: issuerToken, admin: adminToken },
      { totalUnits: 100, maxUnitsPerInvestor: 5, unitPriceUsdc: "1000000" },
    );
    const reserve = (token: string, units: number) =>
      api(stack, "POST", "/api/rwa/checkout", { token, json: { offeringId, units } });

    // Ten units (10% of 100) by two fresh wallets; a third fresh wallet finds the share taken.
    const free = [portalWallet(), portalWallet(), portalWallet()];
    const freeTokens: string[] = [];
    for (const wallet of free) freeTokens.push(await signIn(stack, "investor", wallet));
    await expectJson(await reserve(freeTokens[0]!, 5), 201);
    await expectJson(await reserve(freeTokens[1]!, 5), 201);
    const refused = await expectProblem(await reserve(freeTokens[2]!, 1), 409, "unverified_hold_limit");
    expect(refused.unverifiedHoldLimit).toBe(10);

    // A KYC-approved investor is not held back by them, but holds at most three unpaid purchases.
    const verified = portalWallet();
    await expectJson(
      await api(stack, "PUT", `/api/admin/investors/${verified.address}/eligibility`, {
        token: adminToken,
        json: { kycStatus: "approved", jurisdiction: "DE" },
      }),
      200,
    );
    const verifiedToken = await signIn(stack, "investor", verified);
    for (let i = 0; i < 3; i++) await expectJson(await reserve(verifiedToken, 1), 201);
    await expectProblem(await reserve(verifiedToken, 1), 409, "too_many_open_purchases");
    const offering = await expectJson(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200);
    expect(offering.unitsAvailable).toBe(100 - 10 - 3);
  });
});

describe("payment references", () => {
  it("answers a clear 503 problem when a price's references are exhausted, and reuses released ones", async () => {
    const total = 31_000_000n + BigInt(Math.floor(Math.random() * 1000)) * 1_000_000n;
    const address = stack.local.partner.paymentAddress.toLowerCase();
    const rows = [];
    for (let offset = 1; offset <= 9_999; offset++) {
      rows.push({
        chain_id: 31337,
        payment_address: address,
        amount_due: (total + BigInt(offset)).toString(),
        total_price_usdc: total.toString(),
        session_id: `cs_hoarded_${offset}`,
        released_at: Date.now() + 7 * 86_400_000,
      });
    }
    for (let i = 0; i < rows.length; i += 500)
      await store
        .insertInto("amount_reservation")
        .values(rows.slice(i, i + 500))
        .execute();

    const exhausted = await stack.partnerFetch("/v1/checkout/sessions", {
      method: "POST",
      json: sessionBody({ totalPriceUsdc: total.toString() }),
    });
    const problem = await expectProblem(exhausted, 503, "reference_space_exhausted");
    expect(problem.detail).toMatch(/payment address/);

    // The hoarding sessions ended unused over an hour ago: their references are free again.
    await store
      .updateTable("amount_reservation")
      .set({ released_at: Date.now() - 1 })
      .where("total_price_usdc", "=", total.toString())
      .execute();
    const created = await createSession(stack, { totalPriceUsdc: total.toString() });
    expect(BigInt(created.payment.amount) - total).toBeGreaterThanOrEqual(1n);
  });

  it("releases the reference of a superseded session soon, and credits a late exact payment to no session", async () => {
    const first = await createSession(stack, { totalPriceUsdc: "17000000" });
    const reservation = () =>
      store.selectFrom("amount_reservation").selectAll().where("session_id", "=", first.id).executeTakeFirstOrThrow();
    expect(Number((await reservation()).released_at)).toBeGreaterThan(Date.now() + 6 * 86_400_000);

    // The customer starts again: the same order gets a new session, the first one is superseded.
    const second = await createSession(stack, {
      totalPriceUsdc: "17000000",
      externalOrderId: first.externalOrderId,
      idempotencyKey: `again-${first.externalOrderId}`,
    });
    expect(second.id).not.toBe(first.id);
    const releasedAt = Number((await reservation()).released_at);
    expect(releasedAt).toBeLessThanOrEqual(Date.now() + UNUSED_REFERENCE_GRACE_MS);

    // Two hours later (on chain) someone pays the first session's exact amount.
    await stack.testClient.increaseTime({ seconds: 2 * 3600 });
    await stack.testClient.mine({ blocks: 1 });
    const paid = await stack.payUsdc({ from: 4, to: first.payment.recipient, amount: BigInt(first.payment.amount) });
    const payment = await waitFor(
      async () =>
        (await store.selectFrom("payment").selectAll().where("transaction_hash", "=", paid.hash).executeTakeFirst()) ?? undefined,
      { what: "the late payment recorded" },
    );
    expect(payment).toMatchObject({ status: "unresolved", reason: "unmatched", session_id: null });
    const answer = await submitHash(stack, first.clientToken, paid.hash);
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    const order = await readOrder(stack, second.orderId);
    expect(order.status).toBe("awaiting_payment");
  });
});

/**
 * POSTs `bytes` of chunked body (no declared length, in 8 KiB chunks) and reads the
 * answer. fetch cannot be used: it reports the reset of the connection the server drops
 * after a 413 as a failure even when the answer came first. A reset after the answer
 * is expected and ignored.
 */
function streamUntilAnswered(url: string, bytes: number): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const request = httpRequest(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Transfer-Encoding": "chunked", "X-Forwarded-For": newClient() },
    });
    request.on("response", (response) => {
      answered = true;
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (text: string) => {
        body += text;
      });
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, contentType: String(response.headers["content-type"]), body }),
      );
      response.on("error", reject);
    });
    request.on("error", (error) => {
      if (!answered) reject(error);
    });
    const chunk = Buffer.alloc(8 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (!answered && sent < bytes) {
        sent += chunk.length;
        if (!request.write(chunk)) {
          request.once("drain", pump);
          return;
        }
      }
      if (!answered) request.end();
    };
    pump();
  });
}

/**
 * Sends only the headers of a POST declaring a `declared`-byte body and reads the answer;
 * the body is never sent, so the server's answer cannot race the client's writes.
 */
function declareAndWait(
  url: string,
  declared: number,
  headers: Record<string, string>,
): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json", "Content-Length": String(declared) },
    });
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (text: string) => {
        body += text;
      });
      response.on("end", () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, body });
      });
      response.on("error", reject);
    });
    request.on("error", reject);
    request.flushHeaders();
  });
}
