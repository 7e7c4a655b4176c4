import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { constructEvent } from "../../client/src/index.js";
import { listenOnLoopback } from "./loopback-server.js";

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
  const listening = await listenOnLoopback(server);
  return {
    url: `${listening.url}/webhooks/settlement`,
    setSecret(value: string) {
      secret = value;
    },
    get deliveries() {
      return deliveries;
    },
    close: listening.close,
  };
}

/** The partner library's check, as a real receiver would run it. */
function verify(header: string, raw: Buffer, secret: string): boolean {
  try {
    constructEvent(raw, header, secret);
    return true;
  } catch {
    return false;
  }
}
