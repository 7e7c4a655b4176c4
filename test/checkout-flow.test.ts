import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";
import { type Address, encodeFunctionData, erc20Abi, getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { insertPaymentAddress } from "../api/partners/payment-addresses.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { constructEvent, createClient } from "../client/src/index.js";
import { deployTestUsdc } from "../local/deploy.js";
import { stopChild } from "../local/stop-child.js";
import {
  createSession,
  outboxEvents,
  publicPost,
  readOrder,
  readSession,
  sessionBody,
  submitHash,
} from "./support/checkout-helpers.js";
import { accountWallet, adminWallet, api, challenge, expectJson, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// The checkout API on one stack (the default configuration), one describe block per former file:
// - checkout-flow: a session paid on Anvil settles, its certificate is minted, its events are written once.
// - api-wire: the wire conventions of docs/http-conventions.md over real HTTP.
// - checkout-attacks: what an attacker tries against sessions, payments and certificates.
// - hosted-checkout-api: docs/hosted-checkout.md through the real API.
// One stack instead of four saves three boots. hosted-checkout-api runs last: it gives one of the
// stack's payment addresses to a second partner.

let shared: TestStack;

beforeAll(async () => {
  shared = await startTestStack();
}, 420_000);

afterAll(async () => {
  await shared?.stop();
});

describe("checkout-flow", () => {
  let stack: TestStack;
  let store: Store;

  beforeAll(async () => {
    stack = shared;
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  });
  afterAll(async () => {
    await store?.destroy();
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
});

describe("api-wire", () => {
  /**
   * The wire conventions of docs/http-conventions.md over real HTTP: problem+json for
   * unknown paths and methods, WWW-Authenticate on 401, empty optional bodies,
   * EIP-55 addresses out, any case in, and the fulfilment spelling.
   */
  let stack: TestStack;

  beforeAll(async () => {
    stack = shared;
  });

  const url = (path: string) => `${stack.ponder.baseUrl}${path}`;
  const anonymous = (path: string, init: RequestInit = {}) => fetch(url(path), init);
  const withKey = (path: string, init: RequestInit & { json?: unknown } = {}) => stack.partnerFetch(path, init);

  async function expectProblem(response: Response, status: number, code: string) {
    const body = (await response.json()) as { code: string; status: number; detail: string; instance: string; type: string };
    expect({ status: response.status, code: body.code, type: response.headers.get("content-type") }).toEqual({
      status,
      code,
      type: "application/problem+json",
    });
    expect(body.status).toBe(status);
    return body;
  }

  /** A request with its path sent byte for byte (fetch would resolve dot segments before sending). */
  function rawGet(
    path: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; type: string; body: string; headers: IncomingHttpHeaders }> {
    const target = new URL(stack.ponder.baseUrl);
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: target.hostname, port: target.port, path, method: "GET", headers }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          body += chunk;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), body, headers: res.headers }),
        );
      });
      req.on("error", reject);
      req.end();
    });
  }

  describe("connections", () => {
    it("keeps an idle connection open longer than clients and proxies do, so a reused one is never cut mid-request", async () => {
      // The first request through a server sets its timeouts; every answer after says so.
      await anonymous("/v1/health");
      const second = await rawGet("/v1/health", { Connection: "keep-alive" });
      expect(second.headers["keep-alive"]).toBe("timeout=65");
    });
  });

  describe("unknown paths and methods", () => {
    it("answers an unknown path under /v1 and /api with a 404 problem, not Ponder's text/plain", async () => {
      for (const path of ["/v1/nothing-here", "/v1", "/api/nothing-here", "/api", "/api/rwa/nothing/here"]) {
        const body = await expectProblem(await anonymous(path), 404, "not_found");
        expect(body.instance).toBe(path);
      }
      // An unknown path inside a partner prefix: the key is checked first, so an anonymous caller learns nothing.
      await expectProblem(await anonymous("/v1/transfers/nothing"), 401, "unauthenticated");
      await expectProblem(await withKey("/v1/transfers/nothing"), 404, "not_found");
    });

    it("answers a known path with a wrong method 405 with Allow, after authentication", async () => {
      const transfers = await withKey("/v1/transfers", { method: "DELETE" });
      expect(transfers.headers.get("allow")).toBe("GET, HEAD");
      expect((await expectProblem(transfers, 405, "method_not_allowed")).detail).toContain("DELETE");

      const redeliver = await withKey("/v1/events/evt_whatever/redeliver", { method: "GET" });
      expect(redeliver.headers.get("allow")).toBe("POST");
      await expectProblem(redeliver, 405, "method_not_allowed");

      const endpoint = await withKey("/v1/webhook-endpoints/we_x", { method: "PUT" });
      expect(endpoint.headers.get("allow")).toBe("DELETE, GET, HEAD");
      await expectProblem(endpoint, 405, "method_not_allowed");

      const portal = await anonymous("/api/investor/auth/challenge");
      expect(portal.headers.get("allow")).toBe("POST");
      await expectProblem(portal, 405, "method_not_allowed");

      // Refused: without the key the method list is not revealed.
      const anonymousDelete = await anonymous("/v1/transfers", { method: "DELETE" });
      expect(anonymousDelete.headers.get("allow")).toBeNull();
      await expectProblem(anonymousDelete, 401, "unauthenticated");
    });

    it("treats a trailing slash as another path and names the right one; resolves dot segments first", async () => {
      const body = await expectProblem(await withKey("/v1/transfers/"), 404, "not_found");
      expect(body.detail).toContain("Did you mean /v1/transfers");
      expect((await expectProblem(await anonymous("/v1/health/"), 404, "not_found")).detail).toContain("/v1/health");

      const auth = { Authorization: `Bearer ${stack.local.partner.apiKey}` };
      const dotted = await rawGet("/v1/nothing/../transfers", auth);
      expect({ status: dotted.status, type: dotted.type }).toEqual({ status: 200, type: "application/json" });
      const escaped = await rawGet("/v1/%2e%2e/api/nothing", auth);
      expect(escaped.status).toBe(404);
      expect(escaped.type).toBe("application/problem+json");
      expect(JSON.parse(escaped.body)).toMatchObject({ code: "not_found", instance: "/api/nothing" });
      // Climbing above the root stays at the root: nothing outside the app is reached.
      const above = await rawGet("/../../v1/nothing", auth);
      expect({ status: above.status, type: above.type }).toEqual({ status: 404, type: "application/problem+json" });
    });
  });

  describe("WWW-Authenticate on every 401", () => {
    it("challenges API-key routes with Bearer, and says invalid_token when a key was wrong", async () => {
      const missing = await anonymous("/v1/transfers");
      expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="partner API"');
      await expectProblem(missing, 401, "unauthenticated");

      const malformed = await anonymous("/v1/transfers", { headers: { Authorization: "Basic abc" } });
      expect(malformed.headers.get("www-authenticate")).toBe('Bearer realm="partner API"');
      await expectProblem(malformed, 401, "unauthenticated");

      const wrong = await anonymous("/v1/transfers", { headers: { Authorization: "Bearer sk_test_not-a-key" } });
      expect(wrong.headers.get("www-authenticate")).toBe('Bearer realm="partner API", error="invalid_token"');
      await expectProblem(wrong, 401, "unauthenticated");

      // Accepted: no challenge on an answer that is not a 401.
      const ok = await withKey("/v1/transfers");
      expect(ok.status).toBe(200);
      expect(ok.headers.get("www-authenticate")).toBeNull();
    });

    it("challenges portal and console session routes with Bearer in the portal's realm", async () => {
      const admin = await anonymous("/api/admin/investors");
      expect(admin.headers.get("www-authenticate")).toBe('Bearer realm="admin portal"');
      await expectProblem(admin, 401, "unauthenticated");

      const console = await anonymous("/api/partner/profile", { headers: { Authorization: "Bearer pst_expired" } });
      expect(console.headers.get("www-authenticate")).toBe('Bearer realm="partner portal", error="invalid_token"');
      await expectProblem(console, 401, "unauthenticated");

      // A sign-in whose signature does not match: the realm of the portal it was for.
      const wallet = accountWallet(stack, 3);
      const { message } = await challenge(stack, "investor", wallet.address);
      const forged = await accountWallet(stack, 4).sign(message);
      const refused = await anonymous("/api/investor/auth/verify", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ message, signature: forged }),
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="investor portal"');
    });

    it("challenges a wrong checkout client token with the ClientToken scheme", async () => {
      const session = await createSession(stack);
      const wrong = await anonymous(`/v1/public/checkout/sessions/${session.id}/validate`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ clientToken: "ct_not-this-one" }),
      });
      expect(wrong.headers.get("www-authenticate")).toBe('ClientToken realm="checkout"');
      await expectProblem(wrong, 401, "invalid_client_token");
    });
  });

  describe("payments, events and addresses", () => {
    let sessionOrderId: string;
    let payer: Address;

    it("shows addresses in EIP-55 form in sessions, orders, payments, transfers and events; takes any case in", async () => {
      const usdc = getAddress(stack.local.contracts.usdc);
      const recipient = getAddress(stack.local.partner.paymentAddress);
      payer = getAddress(stack.local.accounts[1]!.address);
      // The checksummed forms differ from lowercase, so the assertions below can fail.
      expect(usdc).not.toBe(usdc.toLowerCase());
      expect(recipient).not.toBe(recipient.toLowerCase());

      const session = await createSession(stack);
      sessionOrderId = session.orderId;
      expect(session.payment).toMatchObject({ tokenAddress: usdc, recipient });
      expect(session.payment.uri).toBe(`ethereum:${usdc}@31337/transfer?address=${recipient}&uint256=${session.payment.amount}`);

      const paid = await stack.payUsdc({ from: 1, to: recipient, amount: BigInt(session.payment.amount) });
      await waitFor(async () => {
        const body = await (await submitHash(stack, session.clientToken, paid.hash)).json();
        return body.status === "settled" ? body : undefined;
      });
      const order = await readOrder(stack, session.orderId);
      expect(order.payment).toMatchObject({ from: payer, to: recipient });
      expect(order.session.payment).toMatchObject({ tokenAddress: usdc, recipient });

      const payments = await (await withKey("/v1/payments")).json();
      const payment = payments.data.find((p: { transactionHash: string }) => p.transactionHash === paid.hash);
      expect(payment).toMatchObject({ from: payer, to: recipient });

      // The transfer filter takes lowercase, checksummed and upper-case hex alike.
      for (const to of [recipient.toLowerCase(), recipient, `0x${recipient.slice(2).toUpperCase()}`]) {
        const transfers = await (await withKey(`/v1/transfers?to=${to}&txHash=${paid.hash}`)).json();
        expect(transfers.data).toHaveLength(1);
        expect(transfers.data[0]).toMatchObject({ token: usdc, from: payer, to: recipient });
      }
      // Refused: something that is not an address.
      await expectProblem(await withKey("/v1/transfers?to=0x1234"), 400, "invalid_request");
      // Paged by its cursor, the same transfers in the same order; a crafted cursor is refused.
      const everyTransfer = (await (await withKey("/v1/transfers?limit=500")).json()) as {
        data: { transactionHash: string; logIndex: number }[];
        nextCursor: string | null;
      };
      expect(everyTransfer.nextCursor).toBeNull();
      const walked: { transactionHash: string; logIndex: number }[] = [];
      let transferCursor: string | null = null;
      do {
        const page: typeof everyTransfer = await (
          await withKey(`/v1/transfers?limit=1${transferCursor === null ? "" : `&cursor=${transferCursor}`}`)
        ).json();
        walked.push(...page.data);
        transferCursor = page.nextCursor;
      } while (transferCursor !== null);
      expect(walked).toEqual(everyTransfer.data);
      for (const crafted of [{ c: 1e300, b: "1", l: 0 }, { c: 31337, b: "18446744073709551616", l: 0 }, { c: 1 }, "x"]) {
        const cursor = Buffer.from(JSON.stringify(crafted)).toString("base64url");
        await expectProblem(await withKey(`/v1/transfers?cursor=${cursor}`), 400, "invalid_cursor");
      }

      const events = (await (await withKey("/v1/events?limit=100")).json()).data as {
        type: string;
        data: Record<string, unknown>;
      }[];
      const settled = events.find((event) => event.type === "purchase.settled" && event.data.orderId === session.orderId);
      expect(settled?.data).toMatchObject({ payer, recipient, tokenAddress: usdc });
    });

    it("marks an unresolved payment for refund with an empty JSON body; its event shows checksummed addresses", async () => {
      const recipient = getAddress(stack.local.partner.paymentAddress);
      const stray = await stack.payUsdc({ from: 2, to: recipient, amount: 1_234_567n });
      const unresolved = await waitFor(
        async () => {
          const body = await (await withKey("/v1/payments?status=unresolved")).json();
          return body.data.find((p: { transactionHash: string }) => p.transactionHash === stray.hash);
        },
        { timeoutMs: 30_000, what: "the stray payment to be unresolved" },
      );
      expect(unresolved).toMatchObject({ from: getAddress(stack.local.accounts[2]!.address), to: recipient });
      const event = await waitFor(async () => {
        const events = (await (await withKey("/v1/events?limit=100")).json()).data as {
          type: string;
          data: Record<string, unknown>;
        }[];
        return events.find((e) => e.type === "payment.unresolved" && e.data.transactionHash === stray.hash);
      });
      expect(event.data).toMatchObject({ payer: getAddress(stack.local.accounts[2]!.address), recipient });

      const path = `/v1/payments/${unresolved.chainId}/${stray.hash}/${unresolved.logIndex}/refund-requested`;
      // Refused first: a malformed non-empty body, and nothing changes.
      const malformed = await withKey(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{" });
      await expectProblem(malformed, 400, "invalid_request");
      const still = await (await withKey("/v1/payments?status=unresolved")).json();
      expect(still.data.some((p: { transactionHash: string }) => p.transactionHash === stray.hash)).toBe(true);

      const empty = await withKey(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: "" });
      expect(empty.status).toBe(200);
      // The marker now creates a refund of all of it, waiting for the customer's address (docs/refunds.md).
      expect(await empty.json()).toMatchObject({ status: "refund_requested", refund: { status: "awaiting_destination" } });
    });

    it("redelivers an event and rotates a secret with an empty JSON body, and still refuses malformed JSON", async () => {
      const endpoint = await (
        await withKey("/v1/webhook-endpoints", { method: "POST", json: { url: "http://127.0.0.1:9/wire" } })
      ).json();
      const rotate = `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`;
      const json = { "Content-Type": "application/json" };

      await expectProblem(await withKey(rotate, { method: "POST", headers: json, body: "not json" }), 400, "invalid_request");
      const unchanged = await (await withKey(`/v1/webhook-endpoints/${endpoint.id}`)).json();
      expect(unchanged.previousSecretExpiresAt).toBeNull();

      const rotated = await withKey(rotate, { method: "POST", headers: json, body: "" });
      expect(rotated.status).toBe(200);
      const body = await rotated.json();
      expect(body.secret).toMatch(/^whsec_/);
      expect(body.secret).not.toBe(endpoint.secret);

      const events = (await (await withKey("/v1/events?limit=100")).json()).data as { id: string }[];
      const redeliver = `/v1/events/${events[0]!.id}/redeliver`;
      await expectProblem(await withKey(redeliver, { method: "POST", headers: json, body: "{]" }), 400, "invalid_request");
      const queued = await withKey(redeliver, { method: "POST", headers: json, body: "" });
      expect(queued.status).toBe(202);
      expect((await queued.json()).data.some((d: { endpointId: string }) => d.endpointId === endpoint.id)).toBe(true);

      // A route that needs a body lists what is missing instead of calling an empty body malformed.
      const created = await expectProblem(
        await withKey("/v1/checkout/sessions", { method: "POST", headers: json, body: "" }),
        400,
        "invalid_request",
      );
      expect(created.detail).not.toContain("Malformed JSON");
      expect(created.detail).toContain("externalOrderId");
    });

    it("spells fulfilment as the seed does, at one path only: the American spelling is an unknown path", async () => {
      const document = await (await anonymous("/openapi.json")).json();
      const paths = Object.keys(document.paths);
      expect(paths).toContain("/v1/orders/{orderId}/fulfilment");
      expect(paths.filter((path) => path.includes("fulfillment"))).toEqual([]);

      // An unpaid order cannot be fulfilled; the undocumented spelling is not a route at all.
      const unpaid = await createSession(stack);
      const body = { fulfilmentReference: "ship-1", idempotencyKey: "wire-unpaid" };
      await expectProblem(
        await withKey(`/v1/orders/${unpaid.orderId}/fulfilment`, { method: "POST", json: body }),
        409,
        "order_not_settled",
      );
      await expectProblem(
        await withKey(`/v1/orders/${unpaid.orderId}/fulfillment`, { method: "POST", json: body }),
        404,
        "not_found",
      );

      const first = await withKey(`/v1/orders/${sessionOrderId}/fulfilment`, {
        method: "POST",
        json: { fulfilmentReference: "ship-2", idempotencyKey: "wire-paid" },
      });
      expect(first.status).toBe(200);
      const order = await first.json();
      expect(order.fulfilment).toMatchObject({ reference: "ship-2" });
      const again = await withKey(`/v1/orders/${sessionOrderId}/fulfilment`, {
        method: "POST",
        json: { fulfilmentReference: "ship-2", idempotencyKey: "wire-paid" },
      });
      expect(again.status).toBe(200);
      expect((await again.json()).fulfilment).toEqual(order.fulfilment);
      expect(payer).toBe(getAddress(payer));
    });
  });

  describe("static files: the console build and the hosted assets", () => {
    it("serves the console's index with no-store and its hashed assets for good, under the console's policy", async () => {
      const index = await rawGet("/console/anywhere/deep", {});
      expect({ status: index.status, type: index.type }).toEqual({ status: 200, type: "text/html; charset=utf-8" });
      expect(index.headers["cache-control"]).toBe("no-store");
      expect(index.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
      expect(index.headers["x-frame-options"]).toBe("DENY");
      expect(index.headers["x-content-type-options"]).toBe("nosniff");
      const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(index.body)?.[1] as string;
      const asset = await rawGet(script, {});
      expect({ status: asset.status, type: asset.type }).toEqual({ status: 200, type: "text/javascript; charset=utf-8" });
      expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(asset.headers["content-security-policy"]).toContain("script-src 'self'");
      expect(Number(asset.headers["content-length"])).toBe(Buffer.byteLength(asset.body));
    });

    it("refuses to climb out of the console's assets, and answers 404 problem+json for what is not there", async () => {
      for (const path of [
        "/console/assets/..%2f..%2f..%2fbuild.ts",
        "/console/assets/..%2F..%2F..%2Fpackage.json",
        "/console/assets/%2e%2e%2f%2e%2e%2f%2e%2e%2fbuild.ts",
        "/console/assets/..%5c..%5c..%5cbuild.ts",
        "/console/assets/nothing.js",
        "/console/assets/",
      ]) {
        const answer = await rawGet(path, {});
        expect({ path, status: answer.status, type: answer.type }).toEqual({
          path,
          status: 404,
          type: "application/problem+json",
        });
        expect(JSON.parse(answer.body).code).toBe("not_found");
      }
      // Dot segments, also as %2e, are resolved before routing: this is /build.ts, which no route serves.
      const climbed = await rawGet("/console/assets/%2e%2e/%2e%2e/%2e%2e/build.ts", {});
      expect(climbed.status).toBe(404);
      expect(climbed.body).not.toContain("currentConsoleBuild");
    });

    it("serves only the listed hosted assets, byte for byte, with their cross-origin headers", async () => {
      for (const [name, type] of [
        ["checkout-component.js", "text/javascript; charset=utf-8"],
        ["hosted.css", "text/css; charset=utf-8"],
      ] as const) {
        const asset = await rawGet(`/assets/${name}`, {});
        expect({ status: asset.status, type: asset.type }).toEqual({ status: 200, type });
        expect(asset.body).toBe(readFileSync(new URL(`../api/hosted/assets/${name}`, import.meta.url), "utf8"));
        expect(asset.headers["cache-control"]).toBe("public, max-age=300");
        expect(asset.headers["x-content-type-options"]).toBe("nosniff");
        expect(asset.headers["cross-origin-resource-policy"]).toBe("cross-origin");
      }
      for (const path of [
        "/assets/..%2fpages.ts",
        "/assets/%2e%2e%2fpages.ts",
        "/assets/..%2f..%2f..%2fpackage.json",
        "/assets/assets.ts",
        "/assets/nothing.js",
      ]) {
        const answer = await rawGet(path, {});
        expect({ path, status: answer.status, type: answer.type }).toEqual({
          path,
          status: 404,
          type: "application/problem+json",
        });
      }
      // Dot segments are resolved before routing: this is /package.json, which no route serves.
      const climbed = await rawGet("/assets/../package.json", {});
      expect(climbed.status).toBe(404);
      expect(climbed.body).not.toContain('"name"');
    });
  });
});

describe("checkout-attacks", () => {
  let stack: TestStack;
  let store: Store;

  beforeAll(async () => {
    stack = shared;
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  });
  afterAll(async () => {
    await store?.destroy();
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

      // Settled, its order credited by it, no relay: the owner's answer is final and now kept in
      // the replica's memory (docs/architecture.md, "The hot paths"). The cache is keyed by partner
      // and session, so another partner's read of the same id still misses and is refused.
      const owned = await stack.partnerFetch(`/v1/checkout/sessions/${session.id}`);
      expect(owned.status).toBe(200);
      expect((await owned.json()).status).toBe("settled");
      const refused = await other(`/v1/checkout/sessions/${session.id}`);
      expect(refused.status).toBe(404);
      expect((await refused.json()).code).toBe("not_found");
      expect((await readSession(stack, session.id)).id).toBe(session.id);
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
      const short = await stack.payUsdc({
        from: 9,
        to: session.payment.recipient,
        amount: BigInt(session.payment.amount) - 500n,
      });
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
      expect((await api(stack, "POST", path(stray.hash, "refund"), { token: admin, json: { note: "not ours" } })).status).toBe(
        404,
      );
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
      const sessions = await Promise.all(
        Array.from({ length: count }, () => createSession(stack, { totalPriceUsdc: "9990000" })),
      );
      const amounts = new Set(sessions.map((session) => `${session.payment.recipient}:${session.payment.amount}`));
      expect(amounts.size).toBe(count);
      for (const session of sessions) {
        const offset = BigInt(session.payment.amount) - 9_990_000n;
        expect(offset >= 1n && offset <= 9_999n).toBe(true);
      }
    });
  });
});

describe("hosted-checkout-api", () => {
  // docs/hosted-checkout.md through the real API: the hosted url, every creation rule, metadata
  // everywhere, branding, unresolved payments linked to their session and resolved by
  // their own partner only, and local-only test payments.

  const execFileAsync = promisify(execFile);

  let stack: TestStack;
  let store: Store;
  let otherApiKey: string;
  let otherAddress: Address;

  beforeAll(async () => {
    stack = shared;
    store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
    // Partner B owns another watched payment address.
    const other = await createPartner(store, { name: "Shop B" });
    otherApiKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
    otherAddress = stack.deployment.paymentAddresses[3] as Address;
    await insertPaymentAddress(store, {
      partnerId: other.id,
      network: "local",
      chainId: stack.local.chainId,
      address: otherAddress,
    });
  });

  afterAll(async () => {
    await store?.destroy();
  });

  const create = (overrides: Record<string, unknown>) =>
    stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: sessionBody(overrides) });
  const sessionCount = async () =>
    Number(
      (
        await store
          .selectFrom("checkout_session")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  /** Waits until the worker has recorded the transfer (here: as a payment matching no session). */
  const recorded = (hash: string) =>
    waitFor(
      () => store.selectFrom("payment").select("status").where("transaction_hash", "=", hash.toLowerCase()).executeTakeFirst(),
      { what: `payment ${hash}` },
    );
  const otherFetch = (path: string, json?: unknown) =>
    fetch(`${stack.ponder.baseUrl}${path}`, {
      method: json === undefined ? "GET" : "POST",
      headers: { Authorization: `Bearer ${otherApiKey}`, "Content-Type": "application/json" },
      body: json === undefined ? undefined : JSON.stringify(json),
    });

  describe("the hosted url", () => {
    it("comes with creation and with its replay, the client token in the fragment", async () => {
      const body = sessionBody({ shippingRequired: false });
      const first = await expectJson(await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: body }), 201);
      expect(first.url).toBe(`${stack.ponder.baseUrl}/checkout/${first.id}#ct=${encodeURIComponent(first.clientToken)}`);
      const replay = await expectJson(await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: body }), 200);
      expect(replay.id).toBe(first.id);
      expect(replay.url).toBe(`${stack.ponder.baseUrl}/checkout/${first.id}#ct=${encodeURIComponent(replay.clientToken)}`);
      // Standalone, neither page may be framed (the component's frame: test/browser-e2e.test.ts, its "hosted-framing-logos" block); both load
      // only from this origin.
      const hosted = await fetch(`${stack.ponder.baseUrl}/checkout/${first.id}`);
      expect(hosted.headers.get("content-security-policy")).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      );
      expect(hosted.headers.get("x-frame-options")).toBe("DENY");
      expect([hosted.headers.get("x-content-type-options"), hosted.headers.get("referrer-policy")]).toEqual([
        "nosniff",
        "no-referrer",
      ]);
      expect(hosted.headers.get("cache-control")).toBe("no-store");
      const claim = await fetch(`${stack.ponder.baseUrl}/claim/${first.id}`);
      expect(claim.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(claim.headers.get("x-frame-options")).toBe("DENY");
      // The fragment's token opens the session.
      const token = new URL(replay.url).hash.slice("#ct=".length);
      const view = await expectJson(
        await publicPost(stack, `/v1/public/checkout/sessions/${first.id}/validate`, { clientToken: decodeURIComponent(token) }),
        200,
      );
      expect(view.id).toBe(first.id);
      // What a browser sends for the url is the path alone: the page answers without any session data.
      const page = await fetch(replay.url);
      expect(page.status).toBe(200);
      expect(await page.text()).not.toContain(replay.clientToken);
      expect(stack.ponder.output()).not.toContain(replay.clientToken);
      expect(stack.ponder.output()).not.toContain(first.clientToken);
    });
  });

  describe("creation options", () => {
    const badValues: [string, Record<string, unknown>][] = [
      ["successUrl", { successUrl: "not a url" }],
      ["successUrl", { successUrl: "/relative/path" }],
      ["successUrl", { successUrl: "javascript:alert(1)" }],
      ["cancelUrl", { cancelUrl: "ftp://shop.example/cancel" }],
      ["cancelUrl", { cancelUrl: "data:text/html,hi" }],
      ["metadata", { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])) }],
      ["metadata", { metadata: { ["k".repeat(41)]: "v" } }],
      ["metadata", { metadata: { note: "v".repeat(501) } }],
      ["metadata", { metadata: { count: 3 } }],
      ["metadata", { metadata: ["a"] }],
      ["customer", { customer: { email: "not-an-email" } }],
      ["customer", { customer: { phone: "+351" } }],
      ["customer", { customer: { delivery: { country: "Portugal" } } }],
      ["lineItems", { lineItems: [] }],
      ["lineItems", { lineItems: [{ externalProductId: "a", name: "A", quantity: 0, unitPriceUsdc: "25000000" }] }],
      ["lineItems", { lineItems: [{ externalProductId: "a", name: "A", quantity: 1, unitPriceUsdc: "25.00" }] }],
      ["lineItems", { lineItems: [{ externalProductId: "a", name: "A", quantity: 1, unitPriceUsdc: "25000000", extra: 1 }] }],
      [
        "lineItems",
        {
          lineItems: [
            { externalProductId: "a", name: "A", quantity: 2, unitPriceUsdc: "10000000" },
            { externalProductId: "b", name: "B", quantity: 1, unitPriceUsdc: "4000000" },
          ],
        },
      ],
    ];
    it.each(badValues)("refuses a bad %s with a 400 naming it, and creates nothing", async (field, overrides) => {
      const before = await sessionCount();
      const response = await create(overrides);
      const problem = await expectJson(response, 400);
      expect(response.headers.get("content-type")).toContain("application/problem+json");
      expect(problem.code).toBe("invalid_request");
      expect(problem.errors.some((error: { path: string }) => error.path.split(".")[0] === field)).toBe(true);
      expect(await sessionCount()).toBe(before);
    });

    it("accepts limits exactly at the rules and echoes them", async () => {
      const metadata = Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [`${"k".repeat(38)}${String(i).padStart(2, "0")}`, "v".repeat(500)]),
      );
      const lineItems = [
        { externalProductId: "a", name: "Tee", category: "apparel", quantity: 2, unitPriceUsdc: "10000000" },
        { externalProductId: "b", name: "Socks", quantity: 1, unitPriceUsdc: "5000000" },
      ];
      const created = await expectJson(
        await create({
          metadata,
          lineItems,
          successUrl: "https://shop.example/thanks?session={CHECKOUT_SESSION_ID}",
          cancelUrl: "http://127.0.0.1:3000/cart",
          customer: { email: "ada@example.com", name: "Ada", delivery: { city: "Lisbon", country: "PT" } },
        }),
        201,
      );
      expect(created.metadata).toEqual(metadata);
      expect(created.lineItems).toEqual(lineItems);
      expect(created.successUrl).toBe(`https://shop.example/thanks?session=${created.id}`);
      expect(created.cancelUrl).toBe("http://127.0.0.1:3000/cart");
      expect(created.customer).toEqual({ email: "ada@example.com", name: "Ada", delivery: { city: "Lisbon", country: "PT" } });
      const read = await expectJson(await stack.partnerFetch(`/v1/checkout/sessions/${created.id}`), 200);
      expect(read.metadata).toEqual(metadata);
      expect(read.successUrl).toBe(created.successUrl);
    });

    it("puts metadata in the session, the order and every event's data", async () => {
      const metadata = { cartId: "cart-42", channel: "web" };
      const first = await createSession(stack, { metadata, shippingRequired: false });
      // A second session for the same order supersedes the first: session.expired.
      const second = await createSession(stack, {
        metadata,
        shippingRequired: false,
        externalOrderId: first.externalOrderId,
        idempotencyKey: `again-${first.externalOrderId}`,
      });
      const { hash } = await stack.payUsdc({ from: 2, to: second.payment.recipient, amount: BigInt(second.payment.amount) });
      await expectJson(await submitHash(stack, second.clientToken, hash), 200);
      const order = await waitFor(async () => {
        const read = await readOrder(stack, second.orderId);
        return read.status === "paid" ? read : undefined;
      });
      expect(order.metadata).toEqual(metadata);
      const events = (await outboxEvents(stack, store)).filter((event) => event.data.orderId === second.orderId);
      expect(events.map((event) => event.type).sort()).toEqual(["purchase.settled", "session.expired"]);
      for (const event of events) expect(event.data.metadata).toEqual(metadata);
    });
  });

  describe("unresolved payments submitted on a session", () => {
    it("a wrong amount is linked to the session, told to the partner, and attached by it: underpaid", async () => {
      const session = await createSession(stack, { shippingRequired: false, metadata: { cartId: "under" } });
      const short = BigInt(session.payment.amount) - 1_000_000n;
      const { hash } = await stack.payUsdc({ from: 3, to: session.payment.recipient, amount: short });
      await recorded(hash);
      const rejected = await waitFor(async () => {
        const response = await submitHash(stack, session.clientToken, hash);
        const body = await response.json();
        return body.code === "payment_not_found" ? undefined : { status: response.status, body };
      });
      expect(rejected.status).toBe(422);
      expect(rejected.body).toMatchObject({
        code: "wrong_amount",
        amountReceived: short.toString(),
        expectedAmount: session.payment.amount,
        recordedForShop: true,
      });

      const listed = await expectJson(await stack.partnerFetch("/v1/payments?status=unresolved"), 200);
      const payment = listed.data.find((row: { transactionHash: string }) => row.transactionHash === hash.toLowerCase());
      expect(payment).toMatchObject({
        sessionId: session.id,
        orderId: session.orderId,
        expectedAmount: session.payment.amount,
        amount: short.toString(),
        reason: "underpaid",
        status: "unresolved",
      });
      const unresolvedEvents = (await outboxEvents(stack, store)).filter(
        (event) => event.type === "payment.unresolved" && event.data.transactionHash === hash.toLowerCase(),
      );
      expect(unresolvedEvents.at(-1)?.data).toMatchObject({
        sessionId: session.id,
        orderId: session.orderId,
        expectedAmount: session.payment.amount,
        reason: "underpaid",
        metadata: { cartId: "under" },
      });
      // The customer's page learns it too.
      const view = await expectJson(
        await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/validate`, { clientToken: session.clientToken }),
        200,
      );
      expect(view.unresolvedPayment).toMatchObject({
        amount: short.toString(),
        expectedAmount: session.payment.amount,
        reason: "underpaid",
      });

      // Partner B can neither attach nor mark it, nor see it.
      const path = `/v1/payments/${stack.local.chainId}/${hash}/${payment.logIndex}`;
      expect((await otherFetch(`${path}/attach`, { orderId: session.orderId })).status).toBe(404);
      expect((await otherFetch(`${path}/refund-requested`, {})).status).toBe(404);
      const bList = await expectJson(await otherFetch("/v1/payments?status=unresolved"), 200);
      expect(bList.data).toEqual([]);

      await expectJson(await stack.partnerFetch(`${path}/attach`, { method: "POST", json: { orderId: session.orderId } }), 200);
      const order = await readOrder(stack, session.orderId);
      expect(order.status).toBe("paid");
      expect(order.amountPaid).toBe(short.toString());
      const settled = (await outboxEvents(stack, store)).find(
        (event) => event.type === "purchase.settled" && event.data.orderId === session.orderId,
      );
      expect(settled?.data).toMatchObject({ resolution: "attached", underpaid: true, amountPaid: short.toString() });
      // Attached once: a second attach is refused.
      expect((await stack.partnerFetch(`${path}/attach`, { method: "POST", json: { orderId: session.orderId } })).status).toBe(
        409,
      );
    });

    it("overpaid is its own reason, and the partner can mark it for refund instead", async () => {
      const session = await createSession(stack, { shippingRequired: false });
      const more = BigInt(session.payment.amount) + 2_000_000n;
      const { hash } = await stack.payUsdc({ from: 3, to: session.payment.recipient, amount: more });
      await recorded(hash);
      const body = await waitFor(async () => {
        const answer = await (await submitHash(stack, session.clientToken, hash)).json();
        return answer.code === "payment_not_found" ? undefined : answer;
      });
      expect(body).toMatchObject({ code: "wrong_amount", recordedForShop: true });
      // Through the client library, as a partner's server would.
      const client = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.ponder.baseUrl });
      const linked = (await client.payments.list({ status: "unresolved" })).data.find((row) => row.sessionId === session.id);
      expect(linked).toMatchObject({ orderId: session.orderId, expectedAmount: session.payment.amount, reason: "overpaid" });
      // The marker now creates a refund of all of it (docs/refunds.md).
      expect(await client.payments.requestRefund(linked!, { note: "sent back" })).toMatchObject({
        status: "refund_requested",
        refund: { status: "awaiting_destination", amount: linked!.amount, reason: "wrong_amount", note: "sent back" },
      });
      await expect(client.payments.attach(linked!, { orderId: session.orderId })).rejects.toMatchObject({
        code: "payment_not_unresolved",
      });
      // The exact amount still settles the session.
      const { hash: exact } = await stack.payUsdc({
        from: 3,
        to: session.payment.recipient,
        amount: BigInt(session.payment.amount),
      });
      await expectJson(await submitHash(stack, session.clientToken, exact), 200);
      await waitFor(async () => ((await readOrder(stack, session.orderId)).status === "paid" ? true : undefined));
    });
  });

  describe("finding 3: a payment to partner B's address", () => {
    it("cannot be attached to partner A's order, by A or by an admin, and B keeps it", async () => {
      const sessionA = await createSession(stack, { shippingRequired: false });
      // A transfer to B's address that matches nothing: unresolved, B's.
      const { hash } = await stack.payUsdc({ from: 4, to: otherAddress, amount: 1_234_567n });
      const bPayment = await waitFor(async () => {
        const list = await expectJson(await otherFetch("/v1/payments?status=unresolved"), 200);
        return list.data.find((row: { transactionHash: string }) => row.transactionHash === hash.toLowerCase());
      });
      const path = `${stack.local.chainId}/${hash}/${bPayment.logIndex}`;
      // Partner A: not found (not its payment).
      expect(
        (await stack.partnerFetch(`/v1/payments/${path}/attach`, { method: "POST", json: { orderId: sessionA.orderId } })).status,
      ).toBe(404);
      // An admin: refused, whatever the amount.
      const adminToken = await signIn(stack, "admin", adminWallet(stack));
      const refused = await api(stack, "POST", `/api/admin/payments/${path}/attach`, {
        token: adminToken,
        json: { orderId: sessionA.orderId },
      });
      const problem = await expectJson(refused, 409);
      expect(problem.code).toBe("payment_of_another_partner");
      expect((await readOrder(stack, sessionA.orderId)).status).toBe("awaiting_payment");
      // B still sees it, unresolved.
      const list = await expectJson(await otherFetch("/v1/payments?status=unresolved"), 200);
      expect(list.data.some((row: { transactionHash: string }) => row.transactionHash === hash.toLowerCase())).toBe(true);
    });
  });

  describe("branding", () => {
    const png = Buffer.from(
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
      "base64",
    );
    const putLogo = (body: Uint8Array | string, type: string, key?: string) =>
      fetch(`${stack.ponder.baseUrl}/v1/branding/logo`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${key ?? stack.local.partner.apiKey}`, "Content-Type": type },
        body: body as BodyInit,
      });

    it("sets name, colour and support contacts, refusing bad values field by field", async () => {
      for (const [field, value] of [
        ["accentColor", "blue"],
        ["accentColor", "#12345"],
        ["supportUrl", "javascript:alert(1)"],
        ["supportUrl", "not a url"],
        ["supportEmail", "nope"],
        ["displayName", ""],
      ] as const) {
        const problem = await expectJson(
          await stack.partnerFetch("/v1/branding", { method: "PATCH", json: { [field]: value } }),
          400,
        );
        expect(problem.errors.map((error: { path: string }) => error.path)).toContain(field);
      }
      const branding = await expectJson(
        await stack.partnerFetch("/v1/branding", {
          method: "PATCH",
          json: {
            displayName: "Demo Tees",
            accentColor: "#1A7F37",
            supportUrl: "https://shop.example/help",
            supportEmail: "help@shop.example",
          },
        }),
        200,
      );
      expect(branding).toMatchObject({ displayName: "Demo Tees", accentColor: "#1a7f37", supportEmail: "help@shop.example" });
      // Another partner's branding is its own.
      expect((await expectJson(await otherFetch("/v1/branding"), 200)).displayName).toBe("Shop B");
    });

    it("serves an uploaded logo from our origin; refuses script, other types and big files", async () => {
      const uploaded = await expectJson(await putLogo(png, "image/png"), 200);
      expect(uploaded.logoUrl).toMatch(/^\/branding\/ptr_demo\/logo\/[0-9a-f]{64}$/);
      const served = await fetch(`${stack.ponder.baseUrl}${uploaded.logoUrl}`);
      expect(served.headers.get("content-type")).toBe("image/png");
      expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);

      for (const svg of [
        '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><a href="javascript:alert(1)"><rect/></a></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><image href="https://evil.example/x.png"/></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div/></foreignObject></svg>',
        "<html><body>hi</body></html>",
      ]) {
        expect((await expectJson(await putLogo(svg, "image/svg+xml"), 400)).errors[0].path).toBe("logo");
      }
      expect((await expectJson(await putLogo("GIF89a", "image/gif"), 415)).code).toBe("unsupported_logo_type");
      expect((await expectJson(await putLogo("not a png", "image/png"), 400)).code).toBe("invalid_request");
      const big = Buffer.concat([png, Buffer.alloc(64 * 1024)]);
      expect((await expectJson(await putLogo(big, "image/png"), 413)).code).toBe("logo_too_large");

      const svg =
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="#1a7f37"/></svg>';
      const withSvg = await expectJson(await putLogo(svg, "image/svg+xml"), 200);
      const svgServed = await fetch(`${stack.ponder.baseUrl}${withSvg.logoUrl}`);
      expect(svgServed.headers.get("content-type")).toBe("image/svg+xml");
      expect(svgServed.headers.get("content-security-policy")).toContain("sandbox");
      expect(svgServed.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(await svgServed.text()).toBe(svg);
      // The old logo's URL is gone; an unknown one is not found.
      expect((await fetch(`${stack.ponder.baseUrl}${uploaded.logoUrl}`)).status).toBe(404);
      // The hosted page's session view carries the brand.
      const session = await createSession(stack, { shippingRequired: false });
      const view = await expectJson(
        await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/validate`, { clientToken: session.clientToken }),
        200,
      );
      expect(view.merchant).toMatchObject({ displayName: "Demo Tees", logoUrl: withSvg.logoUrl });
      expect(view.metadata).toBeUndefined();
    });
  });

  describe("test payments", () => {
    it("in local mode the service pays a session, exact or with --amount, submitted or not", async () => {
      const session = await createSession(stack, { shippingRequired: false });
      const short = await expectJson(
        await stack.partnerFetch(`/v1/checkout/sessions/${session.id}/test-payment`, {
          method: "POST",
          json: { amount: "1000000", submit: false },
        }),
        200,
      );
      expect(short).toMatchObject({ amount: "1000000", submission: null });
      // Partner B cannot pay A's session through its key.
      expect((await otherFetch(`/v1/checkout/sessions/${session.id}/test-payment`, {})).status).toBe(404);
      const paid = await expectJson(
        await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/test-payment`, { clientToken: session.clientToken }),
        200,
      );
      expect(paid.submission.status).toBe("settled");
      expect(paid.session.status).toBe("settled");
      expect((await readOrder(stack, session.orderId)).amountPaid).toBe(session.payment.amount);
    });

    it("npm run pay and npm run events:listen work against the stack", async () => {
      const received: { header: string | undefined; body: string }[] = [];
      const receiver = createServer((request, response) => {
        let body = "";
        request.on("data", (chunk) => {
          body += chunk;
        });
        request.on("end", () => {
          received.push({ header: request.headers["service-signature"] as string | undefined, body });
          response.end("ok");
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
      const env = { ...process.env, LOCAL_JSON: join(stack.dataDir, "local.json"), LISTEN_SECRET: "whsec_listen_test" };
      // tsx's own entry under this Node (as `npm run events:listen` runs it), not through `npx`:
      // npm exec does not pass a signal on, so killing it left the listener running.
      const listener = spawn(
        process.execPath,
        [
          join("node_modules", "tsx", "dist", "cli.mjs"),
          "scripts/events-listen.ts",
          "--forward-to",
          `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`,
          "--interval",
          "200",
        ],
        { env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let listenerOutput = "";
      listener.stdout.on("data", (chunk) => {
        listenerOutput += chunk;
      });
      try {
        await waitFor(async () => (listenerOutput.includes("signing secret") ? true : undefined), { timeoutMs: 60_000 });
        const session = await createSession(stack, { shippingRequired: false, metadata: { via: "npm run pay" } });
        const pay = await execFileAsync("npx", ["tsx", "scripts/pay.ts", session.id], { env });
        expect(pay.stdout).toMatch(/submitted: settled/);
        expect((await readOrder(stack, session.orderId)).status).toBe("paid");
        const forwarded = await waitFor(
          async () =>
            received.find((delivery) => delivery.body.includes(session.orderId) && delivery.body.includes("purchase.settled")),
          { timeoutMs: 30_000, what: "the forwarded event" },
        );
        const event = constructEvent(forwarded.body, forwarded.header, "whsec_listen_test");
        expect(event.type).toBe("purchase.settled");
        expect(event.data.metadata).toEqual({ via: "npm run pay" });
        expect(() => constructEvent(forwarded.body, forwarded.header, "whsec_other")).toThrow();
        // --amount and --no-submit: a wrong amount the worker finds on its own, unlinked.
        const other = await createSession(stack, { shippingRequired: false });
        const short = await execFileAsync("npx", ["tsx", "scripts/pay.ts", other.id, "--amount", "1000000", "--no-submit"], {
          env,
        });
        expect(short.stdout).toMatch(/sent 1000000 base units/);
        expect(short.stdout).toMatch(/hash not submitted/);
      } finally {
        await stopChild(listener, "SIGINT");
        await new Promise((resolve) => receiver.close(resolve));
      }
    }, 120_000);

    it("outside local mode the routes are not found and the page offers no button", async () => {
      const session = await createSession(stack, { shippingRequired: false });
      // The last test of this file: the service stays out of local mode. A fresh index
      // schema spares the wait for the previous process' lock on the old one.
      // Outside local mode the public origin must be configured: this service's own.
      await stack.restartService({ LOCAL_MODE: "false", DATABASE_SCHEMA: "not_local", PUBLIC_BASE_URL: stack.ponder.baseUrl });
      {
        expect(
          (await stack.partnerFetch(`/v1/checkout/sessions/${session.id}/test-payment`, { method: "POST", json: {} })).status,
        ).toBe(404);
        expect(
          (
            await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/test-payment`, {
              clientToken: session.clientToken,
            })
          ).status,
        ).toBe(404);
        const view = await expectJson(
          await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/validate`, { clientToken: session.clientToken }),
          200,
        );
        expect(view.testPayments).toBe(false);
        // http: redirects only in local mode.
        const problem = await expectJson(await create({ successUrl: "http://shop.example/thanks" }), 400);
        expect(problem.errors[0].path).toBe("successUrl");
        await expectJson(await create({ successUrl: "https://shop.example/thanks" }), 201);
      }
    }, 180_000);
  });
});
