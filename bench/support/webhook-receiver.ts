import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";

export type ReceivedEvent = {
  type: string;
  data: Record<string, unknown>;
  /** performance.now() when the request body had fully arrived. */
  receivedAt: number;
  signatureValid: boolean | undefined;
};

/**
 * A partner's webhook receiver on 127.0.0.1 in the bench process: time-stamps
 * each delivery on arrival, checks its `Service-Signature` once the secret is
 * known, and answers 204.
 */
export async function startBenchReceiver(onEvent: (event: ReceivedEvent) => void) {
  let secret: string | undefined;
  let deliveries = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const receivedAt = performance.now();
      deliveries++;
      res.writeHead(204).end();
      const raw = Buffer.concat(chunks);
      try {
        const envelope = JSON.parse(raw.toString("utf8")) as { type: string; data: Record<string, unknown> };
        const header = req.headers["service-signature"];
        onEvent({
          type: envelope.type,
          data: envelope.data ?? {},
          receivedAt,
          signatureValid: secret === undefined ? undefined : verify(String(header ?? ""), raw, secret),
        });
      } catch {
        // not an event; counted in `deliveries` only
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/webhooks/settlement`,
    setSecret(value: string) {
      secret = value;
    },
    get deliveries() {
      return deliveries;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function verify(header: string, raw: Buffer, secret: string): boolean {
  const parts = header.split(",").map((part) => part.trim().split("="));
  const timestamp = parts.find(([key]) => key === "t")?.[1];
  if (timestamp === undefined) return false;
  const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(raw).digest();
  return parts
    .filter(([key]) => key === "v1")
    .some(([, value]) => {
      const given = Buffer.from(value ?? "", "hex");
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
