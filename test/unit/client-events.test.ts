import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  constructEvent,
  createEventReceiver,
  formatUsdc,
  handleEvent,
  parseUsdc,
  type SettlementEvent,
  toBaseUnits,
  WebhookSignatureError,
} from "../../client/src/index.js";
import { signPayload } from "../../client/src/signature.js";
import { memoryStore } from "../support/memory-event-store.js";
import { sampleSettledData } from "../support/sample-event.js";

// The partner library's functions that need no service: amounts, constructEvent and the event
// receiver. The client-library block of test/api-contract.test.ts makes the calls to a running service.

const envelope = (): SettlementEvent => ({
  id: `evt_${randomUUID().replaceAll("-", "")}`,
  type: "purchase.settled",
  createdAt: new Date().toISOString(),
  data: { ...sampleSettledData("ord_1", { externalOrderId: "order-1" }), amountPaid: "25000123" },
});

describe("amounts", () => {
  it("parses and formats USDC with bigint math only", () => {
    expect(parseUsdc("25.000123")).toBe(25_000_123n);
    expect(parseUsdc("25")).toBe(25_000_000n);
    expect(formatUsdc(25_000_123n)).toBe("25.000123");
    expect(formatUsdc("1")).toBe("0.000001");
    expect(toBaseUnits("9007199254740993123")).toBe(9_007_199_254_740_993_123n);
    expect(() => parseUsdc("1.0000001")).toThrow(TypeError);
    expect(() => toBaseUnits("2.5")).toThrow(TypeError);
  });
});

describe("constructEvent", () => {
  const secret = "whsec_test_secret";
  const event = envelope();
  const body = JSON.stringify(event);

  it("accepts a correct signature over the raw body, as a string or bytes, with one secret or several", () => {
    const header = signPayload({ payload: body, secrets: [secret] });
    expect(constructEvent(body, header, secret)).toEqual(event);
    expect(constructEvent(Buffer.from(body), header, secret)).toEqual(event);
    expect(constructEvent(new TextEncoder().encode(body), header, ["whsec_other", secret])).toEqual(event);
    const rotating = signPayload({ payload: body, secrets: ["whsec_old", secret] });
    expect(constructEvent(body, rotating, secret)).toEqual(event);
  });

  it("rejects a changed body, a stale timestamp, a wrong secret and a missing header with typed errors", () => {
    const header = signPayload({ payload: body, secrets: [secret] });
    const codeOf = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(WebhookSignatureError);
        return (error as WebhookSignatureError).code;
      }
      throw new Error("expected an error");
    };
    expect(codeOf(() => constructEvent(body.replace("25000123", "99000000"), header, secret))).toBe("no_matching_signature");
    expect(codeOf(() => constructEvent(`${body} `, header, secret))).toBe("no_matching_signature");
    expect(codeOf(() => constructEvent(body, header, "whsec_wrong"))).toBe("no_matching_signature");
    expect(codeOf(() => constructEvent(body, undefined, secret))).toBe("header_missing");
    expect(codeOf(() => constructEvent(body, "v1=abc", secret))).toBe("header_malformed");

    const stale = signPayload({ payload: body, secrets: [secret], timestamp: Math.floor(Date.now() / 1000) - 301 });
    expect(codeOf(() => constructEvent(body, stale, secret))).toBe("timestamp_out_of_tolerance");
    expect(constructEvent(body, stale, secret, { toleranceSeconds: 600 })).toEqual(event);
  });

  it("refuses a parsed object with a TypeError that says to pass the raw body", () => {
    const header = signPayload({ payload: body, secrets: [secret] });
    expect(() => constructEvent(event as never, header, secret)).toThrow(TypeError);
    expect(() => constructEvent(event as never, header, secret)).toThrow(/raw request body/);
  });
});

describe("event receiver (docs/events.md)", () => {
  const secret = "whsec_receiver";
  const signedRequest = (event: SettlementEvent, key = secret) => {
    const body = JSON.stringify(event);
    return new Request("http://shop.test/webhooks", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Service-Signature": signPayload({ payload: body, secrets: [key] }) },
      body,
    });
  };

  it("records the id before the effect, marks it after, and answers a duplicate 204 without repeating the effect", async () => {
    const store = memoryStore();
    const effects: string[] = [];
    const receive = createEventReceiver({
      secret,
      store,
      apply: (event) => {
        effects.push(event.id);
        store.log.push(`apply ${event.id}`);
      },
    });
    const event = envelope();
    const first = await receive(signedRequest(event));
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ received: true, id: event.id });
    expect(store.log).toEqual([`record ${event.id}`, `apply ${event.id}`, `processed ${event.id}`]);

    const duplicate = await receive(signedRequest(event));
    expect(duplicate.status).toBe(204);
    expect(await duplicate.text()).toBe("");
    expect(effects).toEqual([event.id]);
  });

  it("verifies before trusting anything: a bad signature is a 400 and touches nothing", async () => {
    const store = memoryStore();
    const receive = createEventReceiver({ secret, store, apply: () => expect.unreachable() });
    const response = await receive(signedRequest(envelope(), "whsec_attacker"));
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("no_matching_signature");
    expect(store.log).toEqual([]);
    expect((await receive(new Request("http://shop.test/webhooks"))).status).toBe(405);
  });

  it("a failed effect answers 500 and releases the id, so the redelivery applies it", async () => {
    const store = memoryStore();
    let failures = 1;
    const effects: string[] = [];
    const event = envelope();
    const apply = (received: SettlementEvent) => {
      if (failures-- > 0) throw new Error("database down");
      effects.push(received.id);
    };
    const body = JSON.stringify(event);
    const header = signPayload({ payload: body, secrets: [secret] });
    expect(await handleEvent({ rawBody: body, signatureHeader: header, secret, store, apply })).toMatchObject({
      outcome: "failed",
      status: 500,
    });
    expect(store.log).toEqual([`record ${event.id}`, `release ${event.id}`]);
    expect(await handleEvent({ rawBody: body, signatureHeader: header, secret, store, apply })).toMatchObject({
      outcome: "processed",
      status: 200,
    });
    expect(effects).toEqual([event.id]);
  });
});
