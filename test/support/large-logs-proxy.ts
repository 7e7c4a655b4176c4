import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

type JsonRpcRequest = { jsonrpc: "2.0"; id: unknown; method: string; params?: unknown[] };

/**
 * A JSON-RPC relay in front of Anvil whose `eth_getLogs` answers grow over viem's
 * 10 MiB response limit when the asked block range is wider than `maxSpan`, as a
 * busy payment address's backfill does on Base: the real logs, plus a filler field
 * that JSON-RPC clients ignore. Everything else is forwarded as it is. It counts the
 * oversized answers it served (a test that never triggered one proves nothing) and
 * every call by method. `holdLogs()` keeps every `eth_getLogs` waiting until
 * `releaseLogs()`: an indexer held in its backfill, for as long as a test needs.
 */
export type LargeLogsProxy = {
  url: string;
  /** Oversized `eth_getLogs` answers served so far. */
  oversized: () => number;
  calls: () => Record<string, number>;
  /** From now on, `eth_getLogs` answers wait until `releaseLogs()`. */
  holdLogs: () => void;
  releaseLogs: () => void;
  /** The block ranges of every `eth_getLogs` by range, in order (not those by block hash). */
  logRanges: () => { from: number; to: number }[];
  /** `eth_getLogs` calls waiting right now. */
  heldLogs: () => number;
  stop: () => Promise<void>;
};

export const OVERSIZED_BYTES = 10 * 1024 * 1024 + 256 * 1024;

export async function startLargeLogsProxy(target: () => string, options: { maxSpan: number }): Promise<LargeLogsProxy> {
  let oversized = 0;
  const calls: Record<string, number> = {};
  const filler = "0".repeat(OVERSIZED_BYTES);
  let held: { released: Promise<void>; release: () => void } | undefined;
  let waiting = 0;
  const ranges: { from: number; to: number }[] = [];

  const forward = async (request: JsonRpcRequest): Promise<Record<string, unknown>> => {
    const response = await fetch(target(), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  const spanOf = (request: JsonRpcRequest): number | undefined => {
    if (request.method !== "eth_getLogs") return undefined;
    const filter = request.params?.[0] as { fromBlock?: unknown; toBlock?: unknown } | undefined;
    if (typeof filter?.fromBlock !== "string" || typeof filter.toBlock !== "string") return undefined;
    if (!filter.fromBlock.startsWith("0x") || !filter.toBlock.startsWith("0x")) return undefined;
    return Number.parseInt(filter.toBlock, 16) - Number.parseInt(filter.fromBlock, 16) + 1;
  };

  const server = createServer(async (req, res) => {
    try {
      const body = JSON.parse(await readBody(req)) as JsonRpcRequest | JsonRpcRequest[];
      const requests = Array.isArray(body) ? body : [body];
      let pad = false;
      const replies = await Promise.all(
        requests.map((request) => {
          calls[request.method] = (calls[request.method] ?? 0) + 1;
          const span = spanOf(request);
          if (span !== undefined) {
            const filter = request.params?.[0] as { fromBlock: string; toBlock: string };
            ranges.push({ from: Number.parseInt(filter.fromBlock, 16), to: Number.parseInt(filter.toBlock, 16) });
          }
          if (span !== undefined && span > options.maxSpan) pad = true;
          if (request.method === "eth_getLogs" && held !== undefined) {
            waiting++;
            return held.released.then(() => {
              waiting--;
              return forward(request);
            });
          }
          return forward(request);
        }),
      );
      const reply = Array.isArray(body) ? replies : replies[0];
      let text = JSON.stringify(reply);
      if (pad) {
        oversized++;
        // `{"jsonrpc":...}` → `{"filler":"000...","jsonrpc":...}`: still valid JSON-RPC.
        text = Array.isArray(reply) ? text : `{"filler":"${filler}",${text.slice(1)}`;
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end(text);
    } catch (error) {
      res.writeHead(502).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    oversized: () => oversized,
    calls: () => ({ ...calls }),
    holdLogs() {
      if (held !== undefined) return;
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      held = { released, release };
    },
    releaseLogs() {
      held?.release();
      held = undefined;
    },
    heldLogs: () => waiting,
    logRanges: () => [...ranges],
    stop: () =>
      new Promise<void>((resolve) => {
        held?.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
