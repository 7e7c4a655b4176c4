import { SettlementApiError, SettlementConnectionError } from "./errors.js";

export type Transport = {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  fetch: typeof globalThis.fetch;
};

export type Query = Record<string, string | number | bigint | undefined>;

/**
 * One API call: JSON in, JSON out, problems as `SettlementApiError`. `accept`
 * lists non-2xx statuses whose JSON body is an answer rather than a problem.
 */
export async function request<answer>(
  transport: Transport,
  params: { method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"; path: string; query?: Query; body?: unknown; accept?: number[] },
): Promise<answer> {
  const url = new URL(params.path.replace(/^\//, ""), `${transport.baseUrl.replace(/\/+$/, "")}/`);
  for (const [key, value] of Object.entries(params.query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, value.toString());
  }
  const headers: Record<string, string> = { Authorization: `Bearer ${transport.apiKey}`, Accept: "application/json" };
  if (params.body !== undefined) headers["Content-Type"] = "application/json";

  let response: Response;
  try {
    response = await transport.fetch(url, {
      method: params.method,
      headers,
      body: params.body === undefined ? undefined : JSON.stringify(params.body),
      signal: AbortSignal.timeout(transport.timeoutMs),
    });
  } catch (cause) {
    throw new SettlementConnectionError(`${params.method} ${url.pathname} did not get an answer: ${String(cause)}`, { cause });
  }

  const text = await response.text();
  if (response.ok || params.accept?.includes(response.status)) return (text === "" ? undefined : JSON.parse(text)) as answer;
  throw problemOf(response, text);
}

function problemOf(response: Response, text: string): SettlementApiError {
  let problem: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === "object") problem = parsed as Record<string, unknown>;
  } catch {
    // Not JSON (a proxy's error page): keep the status and an excerpt.
  }
  const string = (value: unknown) => (typeof value === "string" ? value : undefined);
  return new SettlementApiError({
    status: response.status,
    code: string(problem.code) ?? `http_${response.status}`,
    title: string(problem.title) ?? response.statusText,
    detail: string(problem.detail) ?? (text.slice(0, 200) || response.statusText),
    requestId: string(problem.requestId),
    problem,
  });
}

/**
 * A CSV export (`Accept: text/csv`): the response body as it streams, never held
 * whole; problems as `SettlementApiError` like every other call. No timeout on the
 * body (a year's ledger takes as long as it takes); the answer must start within
 * `timeoutMs`.
 */
export async function requestCsv(
  transport: Transport,
  params: { path: string; query?: Query },
): Promise<ReadableStream<Uint8Array>> {
  const url = new URL(params.path.replace(/^\//, ""), `${transport.baseUrl.replace(/\/+$/, "")}/`);
  for (const [key, value] of Object.entries(params.query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, value.toString());
  }
  const started = new AbortController();
  const timer = setTimeout(() => started.abort(new Error(`no answer within ${transport.timeoutMs} ms`)), transport.timeoutMs);
  let response: Response;
  try {
    response = await transport.fetch(url, {
      method: "GET",
      headers: { Authorization: `Bearer ${transport.apiKey}`, Accept: "text/csv" },
      signal: started.signal,
    });
  } catch (cause) {
    throw new SettlementConnectionError(`GET ${url.pathname} did not get an answer: ${String(cause)}`, { cause });
  } finally {
    clearTimeout(timer);
  }
  if (!response.ok || response.body === null) throw problemOf(response, await response.text());
  return response.body;
}

/**
 * A call answered with text rather than JSON (an SVG QR code): the body as a string,
 * problems as `SettlementApiError` like every other call.
 */
export async function requestText(transport: Transport, params: { path: string; accept: string }): Promise<string> {
  const url = new URL(params.path.replace(/^\//, ""), `${transport.baseUrl.replace(/\/+$/, "")}/`);
  let response: Response;
  try {
    response = await transport.fetch(url, {
      method: "GET",
      headers: { Authorization: `Bearer ${transport.apiKey}`, Accept: `${params.accept}, application/problem+json` },
      signal: AbortSignal.timeout(transport.timeoutMs),
    });
  } catch (cause) {
    throw new SettlementConnectionError(`GET ${url.pathname} did not get an answer: ${String(cause)}`, { cause });
  }
  const text = await response.text();
  if (response.ok) return text;
  throw problemOf(response, text);
}
