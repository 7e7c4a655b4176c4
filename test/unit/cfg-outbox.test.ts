import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemError } from "../../api/http/problem.js";
import { retryDelayMs } from "../../api/outbox/dispatcher.js";
import { createSecretBox } from "../../api/outbox/secret-box.js";
import { subscribesTo } from "../../api/outbox/subscription.js";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  MAX_ENDPOINTS_PER_PARTNER,
  rotateWebhookSecret,
  signingSecrets,
} from "../../api/outbox/webhook-endpoints.js";
import { checkWebhookUrl, isAllowedAddress, MAX_WEBHOOK_URL_LENGTH, type Resolver } from "../../api/outbox/webhook-url.js";
import { createPartner } from "../../api/partners/api-keys.js";
import type { Store } from "../../api/store/open-store.js";
import {
  computeSignature,
  parseSignatureHeader,
  signPayload,
  verifySignature,
  WebhookSignatureError,
} from "../../client/src/signature.js";
import { unitStore } from "../support/unit-store.js";

// Issue 25: the outbox's delivery rules as functions: which URLs a webhook may
// name, the backoff, the signature header, and the endpoint records on a real
// SQLite store. No stack, no DNS: host names resolve through the resolver given.

const unresolvable: Resolver = async () => {
  throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
};
const resolvesTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }) as const);
const LIVE = { localMode: false };
const LOCAL = { localMode: true };
const PUBLIC_ONLY = "webhooks are delivered only to public addresses.";
const OR_LOOPBACK = "webhooks are delivered only to public addresses (or loopback in local mode).";

describe("webhook URL policy", () => {
  it.each([
    [
      "a URL over the length limit",
      `https://hooks.example/${"a".repeat(MAX_WEBHOOK_URL_LENGTH)}`,
      LIVE,
      "The URL is longer than 2048 characters.",
    ],
    ["a relative URL", "hooks.example/x", LIVE, "The URL is not a valid absolute URL."],
    ["http outside local mode", "http://93.184.216.34/x", LIVE, "The URL must use https."],
    ["ftp in local mode", "ftp://93.184.216.34/x", LOCAL, "The URL must use https or http."],
    ["a javascript: URL", "javascript:alert(1)", LIVE, "The URL must use https."],
    [
      "a user and password",
      "https://u:p@93.184.216.34/x",
      LIVE,
      "The URL must not carry credentials; deliveries are authenticated by their signature.",
    ],
    [
      "a user name alone",
      "https://token@93.184.216.34/x",
      LIVE,
      "The URL must not carry credentials; deliveries are authenticated by their signature.",
    ],
    [
      "the cloud metadata address",
      "https://169.254.169.254/latest/meta-data",
      LIVE,
      `169.254.169.254 is a link-local address; ${PUBLIC_ONLY}`,
    ],
    ["IPv6 loopback outside local mode", "https://[::1]/x", LIVE, `::1 is a loopback address; ${PUBLIC_ONLY}`],
    ["a private address even in local mode", "https://10.0.0.1/x", LOCAL, `10.0.0.1 is a private address; ${OR_LOOPBACK}`],
    ["a hex IPv4 host", "https://0x7f000001/x", LIVE, `127.0.0.1 is a loopback address; ${PUBLIC_ONLY}`],
    ["an octal IPv4 host", "https://017700000001/x", LIVE, `127.0.0.1 is a loopback address; ${PUBLIC_ONLY}`],
    ["a shortened IPv4 host", "https://127.1/x", LIVE, `127.0.0.1 is a loopback address; ${PUBLIC_ONLY}`],
    [
      "the metadata address mapped into IPv6",
      "https://[::ffff:169.254.169.254]/x",
      LIVE,
      `::ffff:a9fe:a9fe is a link-local address; ${PUBLIC_ONLY}`,
    ],
    ["an IPv6 unique-local address", "https://[fd00:ec2::254]/x", LIVE, `fd00:ec2::254 is a private address; ${PUBLIC_ONLY}`],
  ])("refuses %s", async (_case, url, policy, reason) => {
    expect(await checkWebhookUrl(url, policy, unresolvable)).toMatchObject({ ok: false, reason });
  });

  it.each([
    ["a name that does not resolve", unresolvable, "The host name hooks.example does not resolve (ENOTFOUND)."],
    ["a name that resolves to nothing", resolvesTo(), "The host name hooks.example does not resolve."],
    [
      "a name that resolves to the metadata address",
      resolvesTo("169.254.169.254"),
      `hooks.example resolves to 169.254.169.254, which is a link-local address; ${PUBLIC_ONLY}`,
    ],
    [
      "a name with one private address among public ones",
      resolvesTo("93.184.216.34", "2606:4700::1", "192.168.1.20"),
      `hooks.example resolves to 192.168.1.20, which is a private address; ${PUBLIC_ONLY}`,
    ],
    [
      "a name that resolves to loopback",
      resolvesTo("127.0.0.1"),
      `hooks.example resolves to 127.0.0.1, which is a loopback address; ${PUBLIC_ONLY}`,
    ],
  ])("refuses %s", async (_case, resolve, reason) => {
    expect(await checkWebhookUrl("https://hooks.example/x", LIVE, resolve)).toMatchObject({ ok: false, reason });
  });

  it("accepts a public IP literal with a port and query without asking DNS, and hands back the address to connect to", async () => {
    const check = await checkWebhookUrl("https://93.184.216.34:8443/x?y=1", LIVE, unresolvable);
    expect(check.ok).toBe(true);
    expect(check.ok && [check.url.href, check.addresses]).toEqual([
      "https://93.184.216.34:8443/x?y=1",
      [{ address: "93.184.216.34", family: 4 }],
    ]);
  });

  it("normalises the host name and the default port, and returns every resolved address", async () => {
    const check = await checkWebhookUrl("https://HOOKS.example:443/x", LIVE, resolvesTo("93.184.216.34", "2606:4700::1"));
    expect(check.ok && [check.url.href, check.addresses]).toEqual([
      "https://hooks.example/x",
      [
        { address: "93.184.216.34", family: 4 },
        { address: "2606:4700::1", family: 6 },
      ],
    ]);
  });

  it("allows http and IPv6 loopback in local mode only", async () => {
    expect((await checkWebhookUrl("http://[::1]:3000/hook", LOCAL, unresolvable)).ok).toBe(true);
    expect((await checkWebhookUrl("http://localhost:3000/hook", LOCAL, resolvesTo("127.0.0.1"))).ok).toBe(true);
  });

  it.each([
    ["a public address", "8.8.8.8", true, true],
    ["loopback", "127.0.0.1", false, true],
    ["private", "10.0.0.1", false, false],
    ["link-local", "169.254.1.1", false, false],
    ["unspecified", "0.0.0.0", false, false],
    ["multicast", "239.1.1.1", false, false],
  ])("isAllowedAddress: %s (live %s, local %s)", (_case, address, live, local) => {
    expect([isAllowedAddress(address, LIVE), isAllowedAddress(address, LOCAL)]).toEqual([live, local]);
  });
});

describe("retry backoff", () => {
  const options = { retryBaseMs: 10_000, retryMaxDelayMs: 3_600_000 };
  const draws = (failures: number, opts = options) => Array.from({ length: 200 }, () => retryDelayMs(failures, opts));

  it("treats zero or negative failures like the first (ceiling: the base)", () => {
    for (const failures of [0, -3]) expect(Math.max(...draws(failures))).toBeLessThanOrEqual(10_000);
  });

  it("stays a finite wait within the maximum after a thousand failures", () => {
    const delays = draws(1_000);
    expect(delays.every((delay) => Number.isInteger(delay) && delay >= 0 && delay <= 3_600_000)).toBe(true);
  });

  it("never waits more than 1 ms with a 1 ms base and maximum, and draws both 0 and 1", () => {
    const delays = new Set(draws(5, { retryBaseMs: 1, retryMaxDelayMs: 1 }));
    expect([...delays].sort()).toEqual([0, 1]);
  });

  it("spreads the waits (full jitter) rather than waiting the ceiling every time", () => {
    const delays = draws(3);
    expect(Math.max(...delays)).toBeLessThanOrEqual(40_000);
    expect(new Set(delays).size).toBeGreaterThan(100);
    expect(Math.min(...delays)).toBeLessThan(20_000);
  });
});

describe("signature header", () => {
  const payload = '{"id":"evt_1"}';
  const T = 1_700_000_000;
  const NOW = T * 1000;

  function code(run: () => unknown): string {
    try {
      run();
    } catch (error) {
      if (error instanceof WebhookSignatureError) return error.code;
      throw error;
    }
    return "verified";
  }

  it("computes HMAC-SHA256 over '<t>.<body>' with the secret's UTF-8 bytes (an independent vector)", () => {
    // printf '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test
    expect(computeSignature({ secret: "whsec_test", timestamp: T, payload })).toBe(
      "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925",
    );
    expect(computeSignature({ secret: "whsec_test", timestamp: T, payload: Buffer.from(payload) })).toBe(
      "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925",
    );
  });

  it("refuses to sign without a secret", () => {
    expect(code(() => signPayload({ payload, secrets: [], timestamp: T }))).toBe("no_secret");
  });

  it.each([
    ["v1 before t, blanks around parts", (sig: string) => ` v1 = ${sig} , t = ${T} `],
    ["upper-case hex", (sig: string) => `t=${T},v1=${sig.toUpperCase()}`],
    ["an unknown scheme and a malformed v1 beside a good one", (sig: string) => `t=${T},v0=abc,v1=xyz,v1=${sig},v2=zzz`],
    ["an empty part", (sig: string) => `t=${T},,v1=${sig}`],
  ])("reads a header with %s", (_case, header) => {
    const sig = computeSignature({ secret: "whsec_test", timestamp: T, payload });
    expect(verifySignature({ payload, header: header(sig), secrets: "whsec_test", now: NOW })).toEqual({ timestamp: T });
  });

  it.each([
    ["a 13-digit timestamp", `t=1700000000000,v1=${"a".repeat(64)}`],
    ["a negative timestamp", `t=-1,v1=${"a".repeat(64)}`],
    ["a fractional timestamp", `t=1700000000.5,v1=${"a".repeat(64)}`],
    ["a signature of 63 hex digits only", `t=${T},v1=${"a".repeat(63)}`],
    ["no key before =", `=${T},v1=${"a".repeat(64)}`],
  ])("calls a header with %s malformed", (_case, header) => {
    expect(code(() => parseSignatureHeader(header))).toBe("header_malformed");
  });

  it("keeps every v1 of a header, lower-cased, in order", () => {
    expect(parseSignatureHeader(`t=5,v1=${"A".repeat(64)},v1=${"b".repeat(64)}`)).toEqual({
      timestamp: 5,
      signatures: ["a".repeat(64), "b".repeat(64)],
    });
  });

  it.each([
    [null, "header_missing"],
    ["", "header_missing"],
  ])("answers a header of %o with %s", (header, expected) => {
    expect(code(() => verifySignature({ payload, header, secrets: "whsec_test", now: NOW }))).toBe(expected);
  });

  it("ignores empty secrets in the list, and refuses a list of only empty ones", () => {
    const header = signPayload({ payload, secrets: ["whsec_test"], timestamp: T });
    expect(verifySignature({ payload, header, secrets: ["", "whsec_test"], now: NOW })).toEqual({ timestamp: T });
    expect(code(() => verifySignature({ payload, header, secrets: ["", ""], now: NOW }))).toBe("no_secret");
    expect(code(() => verifySignature({ payload, header, secrets: "", now: NOW }))).toBe("no_secret");
  });

  it("with a tolerance of 0 accepts the signing second only", () => {
    const header = signPayload({ payload, secrets: ["whsec_test"], timestamp: T });
    expect(code(() => verifySignature({ payload, header, secrets: "whsec_test", now: NOW + 999, toleranceSeconds: 0 }))).toBe(
      "verified",
    );
    expect(code(() => verifySignature({ payload, header, secrets: "whsec_test", now: NOW + 1_000, toleranceSeconds: 0 }))).toBe(
      "timestamp_out_of_tolerance",
    );
  });

  it("does not verify a signature made for another timestamp moved into the header", () => {
    const sig = computeSignature({ secret: "whsec_test", timestamp: T - 1_000, payload });
    expect(code(() => verifySignature({ payload, header: `t=${T},v1=${sig}`, secrets: "whsec_test", now: NOW }))).toBe(
      "no_matching_signature",
    );
  });

  it("signs a delivery with the endpoint's current and previous secrets during a rotation, each verifying alone", () => {
    const box = createSecretBox(Buffer.alloc(32, 3));
    const secrets = signingSecrets(
      {
        id: "we_r",
        partner_id: "ptr_a",
        url: "https://hooks.example/x",
        events_json: '["*"]',
        secret_ciphertext: box.seal("whsec_new", "we_r"),
        previous_secret_ciphertext: box.seal("whsec_old", "we_r"),
        previous_secret_expires_at: NOW + 60_000,
        created_at: 0,
        updated_at: 0,
        deleted_at: null,
      },
      box,
      NOW,
    );
    const header = signPayload({ payload, secrets, timestamp: T });
    expect(header.split(",").map((part) => part.slice(0, 3))).toEqual(["t=1", "v1=", "v1="]);
    for (const secret of ["whsec_new", "whsec_old"])
      expect(verifySignature({ payload, header, secrets: secret, now: NOW })).toEqual({ timestamp: T });
  });
});

describe("subscriptions", () => {
  it.each([
    ['["*"]', "purchase.settled", true],
    ['["*"]', "a.type.added.later", true],
    ['["purchase.settled"]', "purchase.settled", true],
    ['["purchase.settled"]', "session.expired", false],
    ["[]", "purchase.settled", false],
  ])("%s subscribes to %s: %s", (eventsJson, type, expected) => {
    expect(subscribesTo(eventsJson, type)).toBe(expected);
  });
});

describe("webhook endpoint records", () => {
  let store: Store;
  let close: () => Promise<void>;
  const secretBox = createSecretBox(Buffer.alloc(32, 9));
  const create = (partnerId: string, url: string, events?: string[]) =>
    createWebhookEndpoint(store, { partnerId, url, events, policy: LIVE, secretBox });

  async function problemOf(run: () => Promise<unknown>): Promise<{ code: string; detail: string }> {
    try {
      await run();
    } catch (error) {
      if (error instanceof ProblemError) return { code: error.code, detail: error.message };
      throw error;
    }
    throw new Error("expected a ProblemError");
  }

  beforeAll(async () => {
    ({ store, close } = await unitStore());
    for (const id of ["ptr_a", "ptr_b", "ptr_full"]) await createPartner(store, { id, name: id });
  });
  afterAll(() => close());

  it("refuses a forbidden URL with invalid_webhook_url and the policy's reason, storing nothing", async () => {
    expect(await problemOf(() => create("ptr_a", "https://169.254.169.254/"))).toEqual({
      code: "invalid_webhook_url",
      detail: `169.254.169.254 is a link-local address; ${PUBLIC_ONLY}`,
    });
    expect((await listWebhookEndpoints(store, { partnerId: "ptr_a", limit: 50 })).data).toEqual([]);
  });

  it("refuses an unknown event type with invalid_request, naming it", async () => {
    expect(await problemOf(() => create("ptr_a", "https://93.184.216.34/x", ["purchase.settled", "purchase.stolen"]))).toEqual({
      code: "invalid_request",
      detail: "Unknown event type(s): purchase.stolen.",
    });
  });

  it("stores the event types sorted and once each, and every type when '*' is among them", async () => {
    const some = await create("ptr_a", "https://93.184.216.34/some", ["session.expired", "purchase.settled", "session.expired"]);
    expect(some.events).toEqual(["purchase.settled", "session.expired"]);
    const all = await create("ptr_a", "https://93.184.216.34/all", ["purchase.settled", "*"]);
    expect(all.events).toEqual(["*"]);
    const unnamed = await create("ptr_a", "https://93.184.216.34/unnamed");
    expect(unnamed.events).toEqual(["*"]);
  });

  it("returns the secret once, stores it sealed to the endpoint's row, and signs with it", async () => {
    const created = await create("ptr_a", "https://93.184.216.34/secret");
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.id).toMatch(/^we_[0-9a-f]{32}$/);
    expect(created).not.toHaveProperty("secretCiphertext");
    const row = await store.selectFrom("webhook_endpoint").selectAll().where("id", "=", created.id).executeTakeFirstOrThrow();
    expect(row.secret_ciphertext).not.toContain(created.secret);
    expect(signingSecrets(row, secretBox)).toEqual([created.secret]);
  });

  it("does not show one partner another partner's endpoint, nor let it delete or rotate it", async () => {
    const created = await create("ptr_b", "https://93.184.216.34/b");
    const ids = { partnerId: "ptr_a", endpointId: created.id };
    expect((await problemOf(() => getWebhookEndpoint(store, ids))).code).toBe("not_found");
    expect((await problemOf(() => deleteWebhookEndpoint(store, ids))).code).toBe("not_found");
    expect((await problemOf(() => rotateWebhookSecret(store, { ...ids, secretBox }))).code).toBe("not_found");
    expect((await getWebhookEndpoint(store, { partnerId: "ptr_b", endpointId: created.id })).url).toBe("https://93.184.216.34/b");
  });

  it("signs with both secrets after a rotation, and with only the newest two after a second one", async () => {
    const created = await create("ptr_b", "https://93.184.216.34/rotate");
    const first = await rotateWebhookSecret(store, { partnerId: "ptr_b", endpointId: created.id, secretBox });
    const read = () => store.selectFrom("webhook_endpoint").selectAll().where("id", "=", created.id).executeTakeFirstOrThrow();
    expect(signingSecrets(await read(), secretBox)).toEqual([first.secret, created.secret]);
    const second = await rotateWebhookSecret(store, { partnerId: "ptr_b", endpointId: created.id, secretBox });
    expect(signingSecrets(await read(), secretBox)).toEqual([second.secret, first.secret]);
    const view = await getWebhookEndpoint(store, { partnerId: "ptr_b", endpointId: created.id });
    expect(view.previousSecretExpiresAt).toBe(second.previousSecretExpiresAt);
  });

  it("replaces a secret sealed under a lost key without keeping it as the previous one", async () => {
    const created = await create("ptr_b", "https://93.184.216.34/lost-key");
    const newKey = createSecretBox(Buffer.alloc(32, 10));
    const rotated = await rotateWebhookSecret(store, { partnerId: "ptr_b", endpointId: created.id, secretBox: newKey });
    const row = await store.selectFrom("webhook_endpoint").selectAll().where("id", "=", created.id).executeTakeFirstOrThrow();
    expect(signingSecrets(row, newKey)).toEqual([rotated.secret]);
    expect(row.previous_secret_ciphertext).toBeNull();
  });

  it("deletes an endpoint once; it is then gone from reads and lists", async () => {
    const created = await create("ptr_b", "https://93.184.216.34/delete");
    await deleteWebhookEndpoint(store, { partnerId: "ptr_b", endpointId: created.id });
    expect((await problemOf(() => deleteWebhookEndpoint(store, { partnerId: "ptr_b", endpointId: created.id }))).code).toBe(
      "not_found",
    );
    const listed = await listWebhookEndpoints(store, { partnerId: "ptr_b", limit: 50 });
    expect(listed.data.map((endpoint) => endpoint.id)).not.toContain(created.id);
  });

  it(`allows ${MAX_ENDPOINTS_PER_PARTNER} live endpoints per partner, and one more after a deletion`, async () => {
    const created = [];
    for (let index = 0; index < MAX_ENDPOINTS_PER_PARTNER; index++)
      created.push(await create("ptr_full", `https://93.184.216.34/n${index}`));
    expect(await problemOf(() => create("ptr_full", "https://93.184.216.34/one-more"))).toEqual({
      code: "too_many_webhook_endpoints",
      detail: `A partner may register at most ${MAX_ENDPOINTS_PER_PARTNER} webhook endpoints; delete one first.`,
    });
    // Another partner's count is its own.
    expect((await create("ptr_a", "https://93.184.216.34/other-partner")).url).toBe("https://93.184.216.34/other-partner");
    await deleteWebhookEndpoint(store, { partnerId: "ptr_full", endpointId: (created[0] as { id: string }).id });
    expect((await create("ptr_full", "https://93.184.216.34/after-delete")).url).toBe("https://93.184.216.34/after-delete");
  });

  it("lists a partner's endpoints oldest first across pages", async () => {
    const first = await listWebhookEndpoints(store, { partnerId: "ptr_full", limit: 10 });
    expect(first.data).toHaveLength(10);
    const second = await listWebhookEndpoints(store, { partnerId: "ptr_full", limit: 10, cursor: first.nextCursor ?? undefined });
    expect([second.data.length, second.nextCursor]).toEqual([6, null]);
    // Endpoints made in one millisecond follow each other by id: the order is (created_at, id).
    const stored = await store
      .selectFrom("webhook_endpoint")
      .select("url")
      .where("partner_id", "=", "ptr_full")
      .where("deleted_at", "is", null)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    const urls = [...first.data, ...second.data].map((endpoint) => endpoint.url);
    expect(urls).toEqual(stored.map((row) => row.url));
    expect(new Set(urls).size).toBe(16);
    expect(urls).not.toContain("https://93.184.216.34/n0");
  });
});
