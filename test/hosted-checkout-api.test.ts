import { execFile, spawn } from "node:child_process";
import { createServer } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { insertPaymentAddress } from "../api/partners/payment-addresses.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { constructEvent, createClient } from "../client/src/index.js";
import { stopChild } from "../local/stop-child.js";
import { createSession, outboxEvents, publicPost, readOrder, sessionBody, submitHash } from "./support/checkout-helpers.js";
import { adminWallet, api, expectJson, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// docs/hosted-checkout.md through the real API: the hosted url, every creation rule, metadata
// everywhere, branding, unresolved payments linked to their session and resolved by
// their own partner only, and local-only test payments.

const execFileAsync = promisify(execFile);

let stack: TestStack;
let store: Store;
let otherApiKey: string;
let otherAddress: Address;

beforeAll(async () => {
  stack = await startTestStack();
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
  await stack?.stop();
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
    // Standalone, neither page may be framed (the component's frame: test/hosted-framing-logos.test.ts); both load
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
    expect((await stack.partnerFetch(`${path}/attach`, { method: "POST", json: { orderId: session.orderId } })).status).toBe(409);
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

    const svg = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="#1a7f37"/></svg>';
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
        (await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/test-payment`, { clientToken: session.clientToken }))
          .status,
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
