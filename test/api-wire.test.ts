import { readFileSync } from "node:fs";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { type Address, getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession, readOrder, submitHash } from "./support/checkout-helpers.js";
import { accountWallet, challenge } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

/**
 * The wire conventions of docs/http-conventions.md over real HTTP: problem+json for
 * unknown paths and methods, WWW-Authenticate on 401, empty optional bodies,
 * EIP-55 addresses out, any case in, and the fulfilment spelling.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
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
      expect({ path, status: answer.status, type: answer.type }).toEqual({ path, status: 404, type: "application/problem+json" });
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
      expect({ path, status: answer.status, type: answer.type }).toEqual({ path, status: 404, type: "application/problem+json" });
    }
    // Dot segments are resolved before routing: this is /package.json, which no route serves.
    const climbed = await rawGet("/assets/../package.json", {});
    expect(climbed.status).toBe(404);
    expect(climbed.body).not.toContain('"name"');
  });
});
