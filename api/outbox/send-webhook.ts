import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
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

  const body = Buffer.from(params.payload, "utf8");
  const request = check.url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const req = request(
      check.url,
      {
        method: "POST",
        headers: { ...params.headers, "Content-Length": String(body.length) },
        lookup: pinnedLookup(check.addresses),
        agent: false,
        signal,
      },
      (response) => {
        readExcerpt(response).then(
          (excerpt) => {
            const statusCode = response.statusCode ?? 0;
            const ok = statusCode >= 200 && statusCode < 300;
            finish({
              ok,
              statusCode,
              error: ok ? null : describeStatus(statusCode, response),
              responseExcerpt: ok ? null : excerpt,
            });
          },
          () =>
            finish(
              signal.aborted
                ? timedOut()
                : {
                    ok: false,
                    statusCode: response.statusCode ?? null,
                    error: "the response was cut off",
                    responseExcerpt: null,
                  },
            ),
        );
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (signal.aborted) return finish(timedOut());
      finish({ ok: false, statusCode: null, error: `${error.code ?? "error"}: ${error.message}`, responseExcerpt: null });
    });
    req.end(body);
  });
}

function describeStatus(statusCode: number, response: IncomingMessage): string {
  if (statusCode >= 300 && statusCode < 400) {
    return `HTTP ${statusCode}: redirects are not followed${response.headers.location ? ` (Location: ${response.headers.location})` : ""}`;
  }
  return `HTTP ${statusCode}: only a 2xx status acknowledges an event`;
}

/** Reads the body for a short excerpt; a large body is cut off rather than read to its end. */
async function readExcerpt(response: IncomingMessage): Promise<string> {
  let text = "";
  let bytes = 0;
  for await (const chunk of response) {
    bytes += (chunk as Buffer).length;
    if (text.length < EXCERPT_LENGTH) text += (chunk as Buffer).toString("utf8");
    if (bytes > MAX_RESPONSE_BYTES) {
      response.destroy();
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
