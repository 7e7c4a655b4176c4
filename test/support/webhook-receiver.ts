import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type ReceivedWebhook = {
  eventId: string;
  type: string;
  /** The raw body, exactly as it arrived. */
  rawBody: Buffer;
  headers: IncomingHttpHeaders;
  receivedAt: number;
};

/** What the receiver answers to the n-th request (0-based); a status, or a status after a delay. */
export type Responder = (request: ReceivedWebhook, index: number) => number | { status: number; delayMs: number };

/**
 * A partner's webhook receiver on 127.0.0.1, in the test process: logs every
 * request as it arrives and, separately, the ones it answered 2xx to, which is
 * all that "delivered" may claim.
 */
export type WebhookReceiver = {
  port: number;
  url: (path?: string) => string;
  received: ReceivedWebhook[];
  acknowledged: ReceivedWebhook[];
  respond: (responder: Responder) => void;
  /** Stops listening (connections are refused) until `listen()`. */
  close: () => Promise<void>;
  listen: () => Promise<void>;
};

export async function startWebhookReceiver(options: { port?: number; responder?: Responder; listen?: boolean } = {}) {
  let responder: Responder = options.responder ?? (() => 204);
  const received: ReceivedWebhook[] = [];
  const acknowledged: ReceivedWebhook[] = [];
  let server: Server | undefined;
  let port = options.port ?? 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const created = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (chunk: Buffer) => chunks.push(chunk));
        req.on("end", () => {
          const request: ReceivedWebhook = {
            eventId: String(req.headers["service-event-id"] ?? ""),
            type: String(req.headers["service-event-type"] ?? ""),
            rawBody: Buffer.concat(chunks),
            headers: req.headers,
            receivedAt: Date.now(),
          };
          const index = received.push(request) - 1;
          const answer = responder(request, index);
          const { status, delayMs } = typeof answer === "number" ? { status: answer, delayMs: 0 } : answer;
          setTimeout(() => {
            // Logged before the answer leaves, so the log is never behind what the service saw.
            if (status >= 200 && status < 300) acknowledged.push(request);
            res.writeHead(status, { "Content-Type": "text/plain" });
            res.end(status >= 200 && status < 300 ? "" : `nope ${status}`);
          }, delayMs);
        });
      });
      created.once("error", reject);
      created.listen(port, "127.0.0.1", () => {
        port = (created.address() as AddressInfo).port;
        server = created;
        resolve();
      });
    });

  if (options.listen !== false) await listen();

  const receiver: WebhookReceiver = {
    get port() {
      return port;
    },
    url: (path = "/hooks") => `http://127.0.0.1:${port}${path}`,
    received,
    acknowledged,
    respond(next) {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (server === undefined) return resolve();
        server.closeAllConnections();
        server.close(() => resolve());
        server = undefined;
      }),
    listen,
  };
  return receiver;
}
