import type { LookupFunction } from "node:net";
import { Agent, type Dispatcher, request } from "undici";
import { checkWebhookUrl, type ResolvedAddress, type WebhookUrlPolicy } from "./webhook-url.js";

export const USER_AGENT = "usdc-settlement-service-webhooks/1.0";
const EXCERPT_LENGTH = 256;
const MAX_RESPONSE_BYTES = 64 * 1024;

export type SendOutcome = {
  /** Any 2xx. */
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
};

/**
 * One HTTP attempt of a delivery: checks the URL and the addresses its host resolves
 * to right now, then POSTs the exact payload bytes to those addresses (the socket is
 * given the checked addresses, so DNS cannot change between the check and the
 * connection). Redirects are not followed. Never throws: a failure is an outcome.
 */
export async function sendWebhook(params: {
  url: string;
  payload: string;
  headers: Record<string, string>;
  policy: WebhookUrlPolicy;
  timeoutMs: number;
}): Promise<SendOutcome> {
  const signal = AbortSignal.timeout(params.timeoutMs);
  const timedOut = () => ({
    ok: false,
    statusCode: null,
    error: `timed out after ${params.timeoutMs} ms`,
    responseExcerpt: null,
  });
  const check = await Promise.race([
    checkWebhookUrl(params.url, params.policy),
    new Promise<"timeout">((resolve) => signal.addEventListener("abort", () => resolve("timeout"), { once: true })),
  ]);
  if (check === "timeout") return timedOut();
  if (!check.ok) return { ok: false, statusCode: null, error: `refused to connect: ${check.reason}`, responseExcerpt: null };

  // One connection per attempt (no pool shared across endpoints), opened to the
  // checked addresses only: the agent's lookup never asks DNS again. undici follows
  // no redirect unless told to.
  const dispatcher = new Agent({ connect: { lookup: pinnedLookup(check.addresses) }, connections: 1 });
  try {
    const response = await request(check.url, {
      method: "POST",
      headers: params.headers,
      body: Buffer.from(params.payload, "utf8"),
      dispatcher,
      signal,
    });
    const excerpt = await readExcerpt(response.body).catch(() => undefined);
    if (excerpt === undefined) {
      return signal.aborted
        ? timedOut()
        : { ok: false, statusCode: response.statusCode, error: "the response was cut off", responseExcerpt: null };
    }
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    return {
      ok,
      statusCode: response.statusCode,
      error: ok ? null : describeStatus(response.statusCode, response.headers.location),
      responseExcerpt: ok ? null : excerpt,
    };
  } catch (error) {
    if (signal.aborted) return timedOut();
    const { code, message } = error as NodeJS.ErrnoException;
    return { ok: false, statusCode: null, error: `${code ?? "error"}: ${message}`, responseExcerpt: null };
  } finally {
    dispatcher.destroy().catch(() => undefined);
  }
}

function describeStatus(statusCode: number, location: string | string[] | undefined): string {
  if (statusCode >= 300 && statusCode < 400) {
    return `HTTP ${statusCode}: redirects are not followed${location ? ` (Location: ${location})` : ""}`;
  }
  return `HTTP ${statusCode}: only a 2xx status acknowledges an event`;
}

/** Reads the body for a short excerpt; a large body is cut off rather than read to its end. */
async function readExcerpt(body: Dispatcher.ResponseData["body"]): Promise<string> {
  let text = "";
  let bytes = 0;
  for await (const chunk of body) {
    bytes += (chunk as Buffer).length;
    if (text.length < EXCERPT_LENGTH) text += (chunk as Buffer).toString("utf8");
    if (bytes > MAX_RESPONSE_BYTES) {
      body.destroy();
      break;
    }
  }
  return text.slice(0, EXCERPT_LENGTH);
}

/** A `lookup` that answers with addresses already checked, never asking DNS again. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) {
      (callback as unknown as (error: null, addresses: ResolvedAddress[]) => void)(null, addresses);
      return;
    }
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : options.family;
    const first = addresses.find((entry) => family === undefined || family === 0 || entry.family === family);
    if (first === undefined) {
      callback(Object.assign(new Error("no checked address of the requested family"), { code: "ENOTFOUND" }), "", 0);
      return;
    }
    callback(null, first.address, first.family);
  };
}
