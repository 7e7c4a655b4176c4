import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { EventPayloadError } from "../../client/src/errors.js";
import {
  computeSignature,
  parseSignatureHeader,
  SIGNATURE_HEADER,
  signPayload,
  verifySignature,
  WebhookSignatureError,
} from "../../client/src/signature.js";
import { constructEvent, createEventReceiver, handleEvent, type ProcessedEventStore } from "../../client/src/webhooks.js";

/**
 * The partner's side of event signatures (client/src/signature.ts and webhooks.ts), pure:
 * the header grammar, the clock and secret rules of verification, and what constructEvent
 * and handleEvent make of a correctly signed body that is not an event. The cases of
 * test/events-signature.test.ts (any changed byte, ±301 s, a wrong secret, rotation with
 * one secret each, a parsed object) are not repeated here.
 */

const SECRET = "whsec_unit_secret";
const T = 1_800_000_000;
const NOW = T * 1000;
const HEX = "a".repeat(64);
const event = { id: "evt_unit_1", type: "purchase.settled", createdAt: "2027-01-15T08:00:00.000Z", data: { amountPaid: "1" } };
const body = JSON.stringify(event);

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookSignatureError || error instanceof EventPayloadError) return error.code;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("the signature is HMAC-SHA256 over `<t>.<raw body>`", () => {
  it("matches an HMAC computed independently with node:crypto, the `whsec_` prefix part of the key", () => {
    const independent = createHmac("sha256", SECRET).update(`${T}.${body}`).digest("hex");
    expect(computeSignature({ secret: SECRET, timestamp: T, payload: body })).toBe(independent);
    expect(computeSignature({ secret: SECRET.slice("whsec_".length), timestamp: T, payload: body })).not.toBe(independent);
  });

  it("is the same over the body as a string and as its UTF-8 bytes (non-ASCII included)", () => {
    const unicode = JSON.stringify({ ...event, data: { name: "Crème brûlée ☕" } });
    expect(computeSignature({ secret: SECRET, timestamp: T, payload: new TextEncoder().encode(unicode) })).toBe(
      computeSignature({ secret: SECRET, timestamp: T, payload: unicode }),
    );
  });

  it("signing without a secret is refused", () => {
    expect(codeOf(() => signPayload({ payload: body, secrets: [], timestamp: T }))).toBe("no_secret");
  });
});

describe("parseSignatureHeader", () => {
  it.each([
    ["the canonical form", `t=${T},v1=${HEX}`, [HEX]],
    ["spaces around parts and around `=`", ` t = ${T} , v1 = ${HEX} `, [HEX]],
    ["v1 before t", `v1=${HEX},t=${T}`, [HEX]],
    ["upper-case hex, read as lower case", `t=${T},v1=${HEX.toUpperCase()}`, [HEX]],
    ["two v1 entries (a rotation), in order", `t=${T},v1=${HEX},v1=${"b".repeat(64)}`, [HEX, "b".repeat(64)]],
    ["a v1 of the wrong length skipped beside a good one", `t=${T},v1=${"c".repeat(63)},v1=${HEX}`, [HEX]],
    ["unknown schemes and parts without a key skipped", `t=${T},v0=${HEX},=x,junk,v2=zz,v1=${HEX}`, [HEX]],
  ] as const)("reads %s", (_case, header, signatures) => {
    expect(parseSignatureHeader(header)).toEqual({ timestamp: T, signatures });
  });

  it.each([
    ["a timestamp of 13 digits (milliseconds)", `t=${NOW},v1=${HEX}`],
    ["a negative timestamp", `t=-1,v1=${HEX}`],
    ["an empty timestamp", `t=,v1=${HEX}`],
    ["a fractional timestamp", `t=${T}.5,v1=${HEX}`],
    ["no timestamp at all", `v1=${HEX}`],
    ["only a v1 that is not 64 hex digits", `t=${T},v1=${"g".repeat(64)}`],
    ["an empty string", ""],
  ])("refuses %s as header_malformed", (_case, header) => {
    expect(codeOf(() => parseSignatureHeader(header))).toBe("header_malformed");
  });
});

describe("verifySignature: clock and secrets", () => {
  const signed = (timestamp = T, secrets = [SECRET]) => signPayload({ payload: body, secrets, timestamp });

  it.each([
    ["exactly the tolerance in the future", T + 300, NOW, 300, true],
    ["the same second, tolerance 0", T, NOW + 999, 0, true],
    ["one second off, tolerance 0", T, NOW + 1_000, 0, false],
    ["a timestamp an hour old inside a custom hour's tolerance", T - 3_600, NOW, 3_600, true],
  ] as const)("%s", (_case, timestamp, now, toleranceSeconds, accepted) => {
    const run = () => verifySignature({ payload: body, header: signed(timestamp), secrets: SECRET, now, toleranceSeconds });
    if (accepted) expect(run()).toEqual({ timestamp });
    else expect(codeOf(run)).toBe("timestamp_out_of_tolerance");
  });

  it("the timestamp is signed: a captured signature replayed under a fresh `t=` fails", () => {
    const [, v1] = signed(T - 10).split(",");
    expect(codeOf(() => verifySignature({ payload: body, header: `t=${T},${v1}`, secrets: SECRET, now: NOW }))).toBe(
      "no_matching_signature",
    );
  });

  it.each([
    ["an empty header", ""],
    ["a null header", null],
  ])("%s is header_missing", (_case, header) => {
    expect(codeOf(() => verifySignature({ payload: body, header, secrets: SECRET, now: NOW }))).toBe("header_missing");
  });

  it.each([
    ["an empty secret string", ""],
    ["a list of empty secrets", ["", ""]],
  ])("%s is no_secret (empty secrets are dropped, never an HMAC key)", (_case, secrets) => {
    expect(codeOf(() => verifySignature({ payload: body, header: signed(), secrets, now: NOW }))).toBe("no_secret");
  });

  it("an empty secret beside the real one is ignored", () => {
    expect(verifySignature({ payload: body, header: signed(), secrets: ["", SECRET], now: NOW })).toEqual({ timestamp: T });
  });

  it("a forged v1 beside the genuine one does not spoil it; forged ones alone fail", () => {
    const genuine = signed();
    expect(verifySignature({ payload: body, header: `${genuine},v1=${HEX}`, secrets: SECRET, now: NOW })).toEqual({
      timestamp: T,
    });
    expect(codeOf(() => verifySignature({ payload: body, header: `t=${T},v1=${HEX}`, secrets: SECRET, now: NOW }))).toBe(
      "no_matching_signature",
    );
  });

  it("a rotation header signed with the old and new secrets fails for a receiver holding two other secrets", () => {
    const header = signed(T, ["whsec_old", "whsec_new"]);
    expect(codeOf(() => verifySignature({ payload: body, header, secrets: ["whsec_a", "whsec_b"], now: NOW }))).toBe(
      "no_matching_signature",
    );
    expect(verifySignature({ payload: body, header, secrets: ["whsec_a", "whsec_new"], now: NOW })).toEqual({ timestamp: T });
  });
});

describe("constructEvent", () => {
  const header = signPayload({ payload: body, secrets: [SECRET], timestamp: T });
  const signedBody = (raw: string) => [raw, signPayload({ payload: raw, secrets: [SECRET], timestamp: T })] as const;

  it("takes an ArrayBuffer body and a Date as now", () => {
    const bytes = new TextEncoder().encode(body);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    expect(constructEvent(buffer, header, SECRET, { now: new Date(NOW) })).toEqual(event);
  });

  it("checks the signature before parsing: an unsigned non-JSON body is a signature error, not a payload error", () => {
    expect(codeOf(() => constructEvent("not json", header, SECRET, { now: NOW }))).toBe("no_matching_signature");
  });

  it.each([
    ["a signed body that is not JSON", "not json"],
    ["a JSON array", JSON.stringify([event])],
    ["a JSON string", JSON.stringify("evt_1")],
    ["an envelope without an id", JSON.stringify({ ...event, id: undefined })],
    ["an envelope whose id is a number", JSON.stringify({ ...event, id: 1 })],
    ["an envelope whose type is missing", JSON.stringify({ id: "evt_1", data: {} })],
    ["an envelope whose data is null", JSON.stringify({ ...event, data: null })],
    ["an envelope whose data is a string", JSON.stringify({ ...event, data: "{}" })],
  ])("refuses %s with EventPayloadError (invalid_payload)", (_case, raw) => {
    const [payload, signature] = signedBody(raw);
    expect(codeOf(() => constructEvent(payload, signature, SECRET, { now: NOW }))).toBe("invalid_payload");
  });

  it("refuses null as the body with a TypeError naming it", () => {
    expect(() => constructEvent(null as never, header, SECRET, { now: NOW })).toThrow(/not null/);
  });
});

/** The partner's processed-ids store, in memory, logging each call. */
function memoryStore(options: { release: boolean }): ProcessedEventStore & { log: string[] } {
  const ids = new Set<string>();
  const log: string[] = [];
  return {
    log,
    async recordIfNew(id) {
      log.push(`record ${id}`);
      if (ids.has(id)) return false;
      ids.add(id);
      return true;
    },
    async markProcessed(id) {
      log.push(`processed ${id}`);
    },
    ...(options.release
      ? {
          async release(id: string) {
            log.push(`release ${id}`);
            ids.delete(id);
          },
        }
      : {}),
  };
}

describe("handleEvent and the receiver", () => {
  const fresh = () => {
    const raw = JSON.stringify(event);
    return { raw, header: signPayload({ payload: raw, secrets: [SECRET] }) };
  };

  it("a signed body that is not an envelope is rejected (400) before the store is touched", async () => {
    const store = memoryStore({ release: true });
    const raw = JSON.stringify({ hello: "world" });
    const result = await handleEvent({
      rawBody: raw,
      signatureHeader: signPayload({ payload: raw, secrets: [SECRET] }),
      secret: SECRET,
      store,
      apply: () => expect.unreachable(),
    });
    expect(result).toMatchObject({ outcome: "rejected", status: 400 });
    expect(result.outcome === "rejected" && result.error).toBeInstanceOf(EventPayloadError);
    expect(store.log).toEqual([]);
  });

  it("a programming error (a parsed object as body) is thrown, not answered as a 400", async () => {
    const { header } = fresh();
    await expect(
      handleEvent({
        rawBody: event as never,
        signatureHeader: header,
        secret: SECRET,
        store: memoryStore({ release: true }),
        apply: () => {},
      }),
    ).rejects.toBeInstanceOf(TypeError);
  });

  it("without `release`, a failed effect keeps its id: the redelivery is a duplicate (docs: reconcile from events.list)", async () => {
    const store = memoryStore({ release: false });
    const { raw, header } = fresh();
    const failing = await handleEvent({
      rawBody: raw,
      signatureHeader: header,
      secret: SECRET,
      store,
      apply: () => {
        throw new Error("down");
      },
    });
    expect(failing).toMatchObject({ outcome: "failed", status: 500 });
    const again = await handleEvent({
      rawBody: raw,
      signatureHeader: header,
      secret: SECRET,
      store,
      apply: () => expect.unreachable(),
    });
    expect(again).toMatchObject({ outcome: "duplicate", status: 204 });
    expect(store.log).toEqual([`record ${event.id}`, `record ${event.id}`]);
  });

  it("the receiver answers a non-envelope 400 naming invalid_payload and tells onError", async () => {
    const errors: unknown[] = [];
    const receive = createEventReceiver({
      secret: SECRET,
      store: memoryStore({ release: true }),
      apply: () => expect.unreachable(),
      onError: (error) => errors.push(error),
    });
    const raw = "[]";
    const response = await receive(
      new Request("http://shop.test/webhooks", {
        method: "POST",
        headers: { [SIGNATURE_HEADER]: signPayload({ payload: raw, secrets: [SECRET] }) },
        body: raw,
      }),
    );
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/^Event rejected \(invalid_payload\)/);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(EventPayloadError);
  });

  it("the receiver answers another method 405 with Allow: POST", async () => {
    const receive = createEventReceiver({ secret: SECRET, store: memoryStore({ release: true }), apply: () => {} });
    const response = await receive(new Request("http://shop.test/webhooks", { method: "PUT", body: "{}" }));
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
  });
});
