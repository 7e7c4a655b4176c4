import { EventPayloadError } from "./errors.js";
import { DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, verifySignature, WebhookSignatureError } from "./signature.js";
import type { SettlementEvent } from "./types.js";

// One verifier for both sides: the service signs with this package's own module
// (./signature.ts), so the two cannot drift apart.
export { DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, WebhookSignatureError };

export type WebhookSecret = string | readonly string[];

/**
 * Verifies the `Service-Signature` header over the raw request body and returns
 * the event. Throws `WebhookSignatureError` (with a stable `code`) when the event
 * cannot be trusted, and a `TypeError` when handed a parsed object: a parsed and
 * re-serialised body no longer matches its signature.
 *
 * `secret`: during your own rotation, pass both secrets; either one verifies.
 */
export function constructEvent(
  rawBody: string | Uint8Array | ArrayBuffer,
  signatureHeader: string | null | undefined,
  secret: WebhookSecret,
  options: { toleranceSeconds?: number; now?: number | Date } = {},
): SettlementEvent {
  const payload = rawBody instanceof ArrayBuffer ? new Uint8Array(rawBody) : rawBody;
  if (typeof payload !== "string" && !(payload instanceof Uint8Array)) {
    throw new TypeError(
      "constructEvent needs the raw request body exactly as received (a string, Buffer or Uint8Array), " +
        `not ${payload === null ? "null" : `a parsed ${typeof payload}`}. Read it with \`await request.text()\` ` +
        "(or express.raw(), or Hono's `c.req.raw`) before any JSON parsing.",
    );
  }
  verifySignature({
    payload,
    header: signatureHeader,
    secrets: secret,
    toleranceSeconds: options.toleranceSeconds,
    now: options.now,
  });

  let event: unknown;
  try {
    event = JSON.parse(typeof payload === "string" ? payload : new TextDecoder().decode(payload));
  } catch {
    throw new EventPayloadError("The signed body is not JSON.");
  }
  if (!isEnvelope(event)) throw new EventPayloadError("The signed body is not an event envelope { id, type, createdAt, data }.");
  return event;
}

function isEnvelope(value: unknown): value is SettlementEvent {
  if (value === null || typeof value !== "object") return false;
  const event = value as Record<string, unknown>;
  return typeof event.id === "string" && typeof event.type === "string" && event.data !== null && typeof event.data === "object";
}

/**
 * Where you keep the ids of events you have handled (docs/events.md). Both calls
 * must be durable before they resolve.
 */
export type ProcessedEventStore = {
  /** Atomically records the id; true when this call recorded it, false when it was already there. */
  recordIfNew(eventId: string): Promise<boolean>;
  /** Called once the effect of the event is done. */
  markProcessed(eventId: string): Promise<void>;
  /**
   * Optional: forgets an id whose effect failed, so that the redelivery applies it.
   * Without it such an id stays recorded and is skipped; reconcile it from `events.list`.
   */
  release?(eventId: string): Promise<void>;
};

export type ApplyEvent = (event: SettlementEvent) => Promise<void> | void;

export type EventHandlingResult =
  | { outcome: "processed"; status: 200; event: SettlementEvent }
  | { outcome: "duplicate"; status: 204; event: SettlementEvent }
  | { outcome: "rejected"; status: 400; error: Error }
  | { outcome: "failed"; status: 500; event: SettlementEvent; error: unknown };

/**
 * The receiving rules of docs/events.md: verify the signature before trusting
 * anything; record the id before the effect; a duplicate answers 204 without
 * repeating the effect; mark the id processed after the effect. A failed effect
 * answers 500 so that the service delivers the event again.
 */
export async function handleEvent(params: {
  rawBody: string | Uint8Array | ArrayBuffer;
  signatureHeader: string | null | undefined;
  secret: WebhookSecret;
  store: ProcessedEventStore;
  apply: ApplyEvent;
  toleranceSeconds?: number;
}): Promise<EventHandlingResult> {
  let event: SettlementEvent;
  try {
    event = constructEvent(params.rawBody, params.signatureHeader, params.secret, { toleranceSeconds: params.toleranceSeconds });
  } catch (error) {
    if (error instanceof WebhookSignatureError || error instanceof EventPayloadError)
      return { outcome: "rejected", status: 400, error };
    throw error;
  }
  if (!(await params.store.recordIfNew(event.id))) return { outcome: "duplicate", status: 204, event };
  try {
    await params.apply(event);
  } catch (error) {
    await params.store.release?.(event.id);
    return { outcome: "failed", status: 500, event, error };
  }
  await params.store.markProcessed(event.id);
  return { outcome: "processed", status: 200, event };
}

/**
 * A framework-neutral webhook endpoint: `(request: Request) => Promise<Response>`.
 * Mount it where your framework gives you the standard Request untouched, e.g.
 * Hono `app.post("/webhooks", (c) => receive(c.req.raw))`.
 */
export function createEventReceiver(options: {
  secret: WebhookSecret;
  store: ProcessedEventStore;
  apply: ApplyEvent;
  toleranceSeconds?: number;
  /** Told about every rejected or failed event (log it); the response is already decided. */
  onError?: (error: unknown, event: SettlementEvent | undefined) => void;
}): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== "POST") return new Response("Method Not Allowed", { status: 405, headers: { Allow: "POST" } });
    const result = await handleEvent({
      rawBody: new Uint8Array(await request.arrayBuffer()),
      signatureHeader: request.headers.get(SIGNATURE_HEADER),
      secret: options.secret,
      store: options.store,
      apply: options.apply,
      toleranceSeconds: options.toleranceSeconds,
    });
    switch (result.outcome) {
      case "processed":
        return Response.json({ received: true, id: result.event.id }, { status: 200 });
      case "duplicate":
        return new Response(null, { status: 204 });
      case "rejected": {
        options.onError?.(result.error, undefined);
        const code =
          result.error instanceof WebhookSignatureError || result.error instanceof EventPayloadError
            ? result.error.code
            : "invalid";
        return new Response(`Event rejected (${code}): ${result.error.message}`, {
          status: 400,
          headers: { "Content-Type": "text/plain" },
        });
      }
      case "failed":
        options.onError?.(result.error, result.event);
        return new Response("Event handling failed; deliver it again.", {
          status: 500,
          headers: { "Content-Type": "text/plain" },
        });
    }
  };
}
