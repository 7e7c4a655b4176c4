import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendWebhook, USER_AGENT } from "../../api/outbox/send-webhook.js";

// Issue 25: one delivery attempt against an in-process receiver on 127.0.0.1 (local
// mode allows loopback); no stack, nothing leaves the machine.
type Seen = { path: string; headers: IncomingMessage["headers"]; body: string };
const seen: Seen[] = [];
const routes: Record<string, (response: ServerResponse) => void> = {
  "/ok": (response) => response.writeHead(204).end(),
  "/error": (response) => response.writeHead(500, { "Content-Type": "text/plain" }).end("database is down"),
  "/redirect": (response) => response.writeHead(302, { Location: "https://elsewhere.example/hook" }).end(),
  "/large": (response) => response.writeHead(400).end("e".repeat(100_000)),
  "/silent": () => undefined,
};
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({ path: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      (routes[request.url ?? ""] ?? ((r: ServerResponse) => r.writeHead(404).end()))(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const LOCAL = { localMode: true };
const send = (path: string, overrides: Partial<Parameters<typeof sendWebhook>[0]> = {}) =>
  sendWebhook({
    url: `${base}${path}`,
    payload: '{"id":"evt_1","amount":"1.50 €"}',
    headers: { "Content-Type": "application/json", "Service-Signature": "t=1,v1=abc", "User-Agent": USER_AGENT },
    policy: LOCAL,
    // Generous: a loaded machine must not turn an answered attempt into a timeout.
    timeoutMs: 15_000,
    ...overrides,
  });
const requestsTo = (path: string) => seen.filter((request) => request.path === path);

describe("sendWebhook", () => {
  it("POSTs the exact payload bytes with the given headers, and a 2xx acknowledges", async () => {
    expect(await send("/ok")).toEqual({ ok: true, statusCode: 204, error: null, responseExcerpt: null });
    const [request] = requestsTo("/ok");
    expect(request?.body).toBe('{"id":"evt_1","amount":"1.50 €"}');
    expect(request?.headers["service-signature"]).toBe("t=1,v1=abc");
    expect(request?.headers["user-agent"]).toBe(USER_AGENT);
    expect(request?.headers["content-length"]).toBe(String(Buffer.byteLength('{"id":"evt_1","amount":"1.50 €"}')));
  });

  it("counts a 5xx as a failure and keeps an excerpt of the answer", async () => {
    expect(await send("/error")).toEqual({
      ok: false,
      statusCode: 500,
      error: "HTTP 500: only a 2xx status acknowledges an event",
      responseExcerpt: "database is down",
    });
  });

  it("does not follow a redirect, and names where it pointed", async () => {
    expect(await send("/redirect")).toMatchObject({
      ok: false,
      statusCode: 302,
      error: "HTTP 302: redirects are not followed (Location: https://elsewhere.example/hook)",
    });
    expect(requestsTo("/redirect")).toHaveLength(1);
  });

  it("keeps at most 256 characters of a large answer", async () => {
    const outcome = await send("/large");
    expect([outcome.statusCode, outcome.responseExcerpt]).toEqual([400, "e".repeat(256)]);
  });

  it("gives up on a receiver that does not answer within the attempt's time", async () => {
    const started = Date.now();
    expect(await send("/silent", { timeoutMs: 300 })).toEqual({
      ok: false,
      statusCode: null,
      error: "timed out after 300 ms",
      responseExcerpt: null,
    });
    // It gave up on its own, long before the receiver (which never answers) or the default attempt time.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("outside local mode refuses the loopback receiver without connecting to it", async () => {
    const before = requestsTo("/ok").length;
    expect(await send("/ok", { url: `${base.replace("http:", "https:")}/ok`, policy: { localMode: false } })).toEqual({
      ok: false,
      statusCode: null,
      error: "refused to connect: 127.0.0.1 is a loopback address; webhooks are delivered only to public addresses.",
      responseExcerpt: null,
    });
    expect(requestsTo("/ok")).toHaveLength(before);
  });

  it("reports a refused connection by its error code", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const outcome = await send("/ok", { url: `http://127.0.0.1:${port}/ok` });
    expect([outcome.ok, outcome.statusCode]).toEqual([false, null]);
    expect(outcome.error).toMatch(/^ECONNREFUSED: /);
  });
});
