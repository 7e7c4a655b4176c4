import { createHmac, timingSafeEqual } from "node:crypto";

// The one signing module of both sides: the partner client library verifies with it
// and the service's dispatcher signs with it (api/outbox imports it from here), so
// signer and verifier cannot drift apart. Self-contained on purpose (node:crypto
// only): it ships in the client package, which depends on nothing.

/** The header that carries the signature: `t=<unix seconds>,v1=<hex>[,v1=<hex>]`. */
export const SIGNATURE_HEADER = "Service-Signature";
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookSignatureErrorCode =
  | "payload_not_raw"
  | "no_secret"
  | "header_missing"
  | "header_malformed"
  | "timestamp_out_of_tolerance"
  | "no_matching_signature";

/** Why an event could not be trusted; `code` is stable, the message explains. */
export class WebhookSignatureError extends Error {
  override name = "WebhookSignatureError";
  readonly code: WebhookSignatureErrorCode;

  constructor(code: WebhookSignatureErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** hex HMAC-SHA256(secret, "<t>.<raw body>"); the secret is used as its UTF-8 bytes, `whsec_` prefix included. */
export function computeSignature(params: { secret: string; timestamp: number; payload: string | Uint8Array }): string {
  return createHmac("sha256", params.secret).update(`${params.timestamp}.`).update(params.payload).digest("hex");
}

/**
 * The `Service-Signature` header value for one delivery: one `v1=` entry per
 * secret, so that during a rotation a receiver holding either secret can verify.
 */
export function signPayload(params: {
  payload: string | Uint8Array;
  secrets: readonly string[];
  /** Unix seconds; default now. */
  timestamp?: number;
}): string {
  if (params.secrets.length === 0) throw new WebhookSignatureError("no_secret", "At least one secret is needed to sign.");
  const timestamp = params.timestamp ?? Math.floor(Date.now() / 1000);
  const signatures = params.secrets.map((secret) => `v1=${computeSignature({ secret, timestamp, payload: params.payload })}`);
  return [`t=${timestamp}`, ...signatures].join(",");
}

/** Reads `t=...,v1=...,v1=...`; unknown schemes (e.g. a future `v2=`) are ignored. */
export function parseSignatureHeader(header: string): { timestamp: number; signatures: string[] } {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const separator = part.indexOf("=");
    if (separator <= 0) continue;
    const key = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (key === "t") {
      if (!/^\d{1,12}$/.test(value) || timestamp !== undefined) {
        throw new WebhookSignatureError("header_malformed", "The signature header must carry exactly one `t=<unix seconds>`.");
      }
      timestamp = Number(value);
    } else if (key === "v1" && /^[0-9a-f]{64}$/i.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  if (timestamp === undefined) throw new WebhookSignatureError("header_malformed", "The signature header has no `t=` timestamp.");
  if (signatures.length === 0)
    throw new WebhookSignatureError("header_malformed", "The signature header has no `v1=` signature.");
  return { timestamp, signatures };
}

/**
 * Verifies a received event against the raw request body, before anything in it is
 * trusted. Takes the body exactly as received (string or bytes): a parsed and
 * re-serialised object would not match, so one is refused outright. Throws a
 * `WebhookSignatureError`; returns the signed timestamp (unix seconds) on success.
 */
export function verifySignature(params: {
  payload: string | Uint8Array;
  header: string | null | undefined;
  /** Every secret currently valid for the endpoint (during your own rotation, both). */
  secrets: string | readonly string[];
  toleranceSeconds?: number;
  /** Milliseconds since epoch, like `Date.now()`; or a Date. */
  now?: number | Date;
}): { timestamp: number } {
  const { payload } = params;
  if (typeof payload !== "string" && !(payload instanceof Uint8Array)) {
    throw new WebhookSignatureError(
      "payload_not_raw",
      "Pass the raw request body (a string or Buffer) exactly as received, not a parsed object.",
    );
  }
  const secrets = (typeof params.secrets === "string" ? [params.secrets] : params.secrets).filter((s) => s.length > 0);
  if (secrets.length === 0) throw new WebhookSignatureError("no_secret", "No webhook secret was given to verify with.");
  if (params.header === undefined || params.header === null || params.header === "") {
    throw new WebhookSignatureError("header_missing", `The ${SIGNATURE_HEADER} header is missing.`);
  }
  const { timestamp, signatures } = parseSignatureHeader(params.header);

  const tolerance = params.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowMs = params.now === undefined ? Date.now() : typeof params.now === "number" ? params.now : params.now.getTime();
  if (Math.abs(Math.floor(nowMs / 1000) - timestamp) > tolerance) {
    throw new WebhookSignatureError(
      "timestamp_out_of_tolerance",
      `The signature timestamp is more than ${tolerance} s away from now (a replay or a skewed clock).`,
    );
  }

  // Compare every pair, without stopping early, so timing reveals nothing.
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(computeSignature({ secret, timestamp, payload }), "hex");
    for (const signature of signatures) {
      if (timingSafeEqual(expected, Buffer.from(signature, "hex"))) matched = true;
    }
  }
  if (!matched) {
    throw new WebhookSignatureError("no_matching_signature", "No signature matches the payload with the given secret(s).");
  }
  return { timestamp };
}
