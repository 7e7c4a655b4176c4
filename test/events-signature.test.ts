import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { retryDelayMs } from "../api/outbox/dispatcher.js";
import { createSecretBox } from "../api/outbox/secret-box.js";
import { generateWebhookSecret } from "../api/outbox/webhook-endpoints.js";
import { checkWebhookUrl, classifyAddress } from "../api/outbox/webhook-url.js";
import { computeSignature, signPayload, verifySignature, WebhookSignatureError } from "../client/src/signature.js";

const payload = JSON.stringify({
  id: "evt_1",
  type: "purchase.settled",
  createdAt: "2026-01-01T00:00:00.000Z",
  data: { a: "1" },
});
const now = 1_800_000_000_000;
const t = now / 1000;

function failure(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookSignatureError);
    return (error as WebhookSignatureError).code;
  }
  throw new Error("expected a WebhookSignatureError");
}

describe("Service-Signature", () => {
  const secret = generateWebhookSecret();

  it("is t=<unix s>,v1=<hex HMAC-SHA256(secret, '<t>.<body>')>", () => {
    const header = signPayload({ payload, secrets: [secret], timestamp: t });
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(header).toBe(`t=${t},v1=${computeSignature({ secret, timestamp: t, payload })}`);
    expect(verifySignature({ payload, header, secrets: secret, now })).toEqual({ timestamp: t });
    expect(verifySignature({ payload: Buffer.from(payload), header, secrets: [secret], now })).toEqual({ timestamp: t });
  });

  it("fails when any byte of the body changes", () => {
    const header = signPayload({ payload, secrets: [secret], timestamp: t });
    const bytes = Buffer.from(payload);
    for (let index = 0; index < bytes.length; index++) {
      const tampered = Buffer.from(bytes);
      tampered[index] = (tampered[index] as number) ^ 0x01;
      expect(failure(() => verifySignature({ payload: tampered, header, secrets: secret, now }))).toBe("no_matching_signature");
    }
    // Re-serialising a parsed body is a change too (here: the same JSON, spaced).
    const reserialised = JSON.stringify(JSON.parse(payload), null, 1);
    expect(failure(() => verifySignature({ payload: reserialised, header, secrets: secret, now }))).toBe("no_matching_signature");
  });

  it("fails with a stale or far-future timestamp and passes within the tolerance", () => {
    const stale = signPayload({ payload, secrets: [secret], timestamp: t - 301 });
    expect(failure(() => verifySignature({ payload, header: stale, secrets: secret, now }))).toBe("timestamp_out_of_tolerance");
    const future = signPayload({ payload, secrets: [secret], timestamp: t + 301 });
    expect(failure(() => verifySignature({ payload, header: future, secrets: secret, now }))).toBe("timestamp_out_of_tolerance");
    const edge = signPayload({ payload, secrets: [secret], timestamp: t - 300 });
    expect(verifySignature({ payload, header: edge, secrets: secret, now: new Date(now) })).toEqual({ timestamp: t - 300 });
    expect(verifySignature({ payload, header: stale, secrets: secret, now, toleranceSeconds: 600 })).toEqual({
      timestamp: t - 301,
    });
  });

  it("fails with a wrong secret", () => {
    const header = signPayload({ payload, secrets: [secret], timestamp: t });
    expect(failure(() => verifySignature({ payload, header, secrets: generateWebhookSecret(), now }))).toBe(
      "no_matching_signature",
    );
  });

  it("carries one v1 per secret during a rotation, each verifying on its own", () => {
    const next = generateWebhookSecret();
    const header = signPayload({ payload, secrets: [next, secret], timestamp: t });
    expect(header.split(",").filter((part) => part.startsWith("v1="))).toHaveLength(2);
    expect(verifySignature({ payload, header, secrets: [secret], now })).toEqual({ timestamp: t });
    expect(verifySignature({ payload, header, secrets: [next], now })).toEqual({ timestamp: t });
    expect(failure(() => verifySignature({ payload, header, secrets: [generateWebhookSecret()], now }))).toBe(
      "no_matching_signature",
    );
  });

  it("refuses a parsed object, a missing or malformed header and an empty secret list", () => {
    const header = signPayload({ payload, secrets: [secret], timestamp: t });
    const parsed = JSON.parse(payload) as unknown as string;
    expect(failure(() => verifySignature({ payload: parsed, header, secrets: secret, now }))).toBe("payload_not_raw");
    expect(failure(() => verifySignature({ payload, header: undefined, secrets: secret, now }))).toBe("header_missing");
    expect(failure(() => verifySignature({ payload, header: "v1=abc", secrets: secret, now }))).toBe("header_malformed");
    expect(failure(() => verifySignature({ payload, header: `t=${t}`, secrets: secret, now }))).toBe("header_malformed");
    expect(failure(() => verifySignature({ payload, header: `t=${t},t=${t},${header}`, secrets: secret, now }))).toBe(
      "header_malformed",
    );
    expect(failure(() => verifySignature({ payload, header, secrets: [], now }))).toBe("no_secret");
    // Unknown schemes are ignored, so a future v2 does not break today's receivers.
    expect(verifySignature({ payload, header: `${header},v2=zzz`, secrets: secret, now })).toEqual({ timestamp: t });
  });
});

describe("webhook secrets at rest", () => {
  it("seals with AES-256-GCM bound to the endpoint id, and opens only with the same key and id", () => {
    const key = randomBytes(32);
    const box = createSecretBox(key);
    const secret = generateWebhookSecret();
    const sealed = box.seal(secret, "we_1");
    expect(sealed).not.toContain(secret);
    expect(sealed.startsWith("v1.")).toBe(true);
    expect(box.seal(secret, "we_1")).not.toBe(sealed);
    expect(box.open(sealed, "we_1")).toBe(secret);
    expect(() => box.open(sealed, "we_2")).toThrow();
    expect(() => createSecretBox(randomBytes(32)).open(sealed, "we_1")).toThrow();
    const parts = sealed.split(".");
    const ciphertext = Buffer.from(parts[4] as string, "base64url");
    ciphertext[0] = (ciphertext[0] as number) ^ 1;
    parts[4] = ciphertext.toString("base64url");
    expect(() => box.open(parts.join("."), "we_1")).toThrow();
  });
});

describe("retry schedule", () => {
  it("waits a uniform time up to base * 2^(n-1), capped", () => {
    const options = { retryBaseMs: 10_000, retryMaxDelayMs: 3_600_000 };
    for (let failures = 1; failures <= 30; failures++) {
      const ceiling = Math.min(3_600_000, 10_000 * 2 ** (failures - 1));
      for (let sample = 0; sample < 50; sample++) {
        const delay = retryDelayMs(failures, options);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
  });
});

describe("webhook URL policy", () => {
  it("classifies reserved IPv4 and IPv6 addresses, including IPv4 inside IPv6", () => {
    const cases: [string, string][] = [
      ["8.8.8.8", "public"],
      ["10.1.2.3", "private"],
      ["172.31.255.255", "private"],
      ["192.168.0.1", "private"],
      ["100.64.0.1", "private"],
      ["127.0.0.1", "loopback"],
      ["127.255.0.9", "loopback"],
      ["169.254.169.254", "link-local"],
      ["0.0.0.0", "unspecified"],
      ["224.0.0.1", "multicast"],
      ["255.255.255.255", "reserved"],
      ["198.18.0.1", "reserved"],
      ["::", "unspecified"],
      ["::1", "loopback"],
      ["fe80::1", "link-local"],
      ["fe80::1%eth0", "link-local"],
      ["fd00::1", "private"],
      ["ff02::1", "multicast"],
      ["2001:db8::1", "reserved"],
      ["::ffff:127.0.0.1", "loopback"],
      ["::ffff:7f00:1", "loopback"],
      ["::ffff:10.0.0.1", "private"],
      ["::ffff:8.8.8.8", "public"],
      ["64:ff9b::a9fe:a9fe", "link-local"],
      ["2002:a00:1::1", "private"],
      ["2606:4700:4700::1111", "public"],
      ["not-an-ip", "reserved"],
      ["2130706433", "reserved"],
      ["100.64.0.1", "private"],
      ["192.175.48.1", "reserved"],
      ["::8.8.8.8", "reserved"],
      ["::ffff:0:8.8.8.8", "reserved"],
      ["64:ff9b:1::1", "private"],
      ["fec0::1", "private"],
      ["0::1", "loopback"],
    ];
    for (const [address, kind] of cases) expect([address, classifyAddress(address)]).toEqual([address, kind]);
  });

  it("checks what a host name resolves to, with loopback allowed only in local mode", async () => {
    const resolveTo = (addresses: string[]) => async () =>
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }) as const);
    const mixed = await checkWebhookUrl(
      "https://hooks.example/x",
      { localMode: false },
      resolveTo(["93.184.216.34", "10.0.0.7"]),
    );
    expect(mixed).toMatchObject({ ok: false, reason: expect.stringContaining("10.0.0.7") });
    const publicOnly = await checkWebhookUrl("https://hooks.example/x", { localMode: false }, resolveTo(["93.184.216.34"]));
    expect(publicOnly.ok).toBe(true);
    const loopback = resolveTo(["127.0.0.1", "::1"]);
    expect((await checkWebhookUrl("https://dev.example/x", { localMode: false }, loopback)).ok).toBe(false);
    expect((await checkWebhookUrl("https://dev.example/x", { localMode: true }, loopback)).ok).toBe(true);
    expect((await checkWebhookUrl("http://93.184.216.34/x", { localMode: false })).ok).toBe(false);
    expect((await checkWebhookUrl("http://2130706433/x", { localMode: false })).ok).toBe(false);
  });
});
