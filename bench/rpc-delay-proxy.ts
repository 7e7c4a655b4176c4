import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";
import { listenOnLoopback } from "./support/loopback-server.js";

/**
 * A loopback JSON-RPC forwarder that stands in for a remote RPC provider: every
 * HTTP request waits `delayMs` before it is forwarded (one round trip to a
 * provider; a JSON-RPC batch is one round trip) and every call is counted by
 * method. `GET /__stats` answers the counts, `POST /__reset` zeroes them.
 *
 * Run alone: `RPC_PROXY_TARGET=http://127.0.0.1:8545 RPC_DELAY_MS=40 PORT=0 tsx bench/rpc-delay-proxy.ts`
 * (prints `LISTENING <port>`).
 */
export type RpcProxyStats = { delayMs: number; requests: number; calls: Record<string, number>; totalCalls: number };

export type RpcProxy = {
  url: string;
  port: number;
  stats: () => RpcProxyStats;
  reset: () => void;
  close: () => Promise<void>;
};

export const DEFAULT_RPC_DELAY_MS = 40;

export async function startRpcProxy(options: { target: string; delayMs: number; port?: number }): Promise<RpcProxy> {
  let calls: Record<string, number> = {};
  let requests = 0;

  const count = (body: unknown) => {
    for (const call of Array.isArray(body) ? body : [body]) {
      const method = typeof call === "object" && call !== null && "method" in call ? String(call.method) : "(invalid)";
      calls[method] = (calls[method] ?? 0) + 1;
    }
  };
  const stats = (): RpcProxyStats => ({
    delayMs: options.delayMs,
    requests,
    calls: { ...calls },
    totalCalls: Object.values(calls).reduce((total, value) => total + value, 0),
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");

    if (req.url === "/__stats") {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(stats()));
      return;
    }
    if (req.url === "/__reset") {
      calls = {};
      requests = 0;
      res.writeHead(204).end();
      return;
    }
    requests++;
    try {
      count(JSON.parse(raw));
    } catch {
      count(undefined);
    }
    if (options.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    try {
      const upstream = await fetch(options.target, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: raw,
      });
      const text = await upstream.text();
      res.writeHead(upstream.status, { "Content-Type": "application/json" }).end(text);
    } catch (error) {
      res
        .writeHead(502, { "Content-Type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: `proxy: ${String(error)}` } }));
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  const listening = await listenOnLoopback(server, options.port);
  return {
    ...listening,
    stats,
    reset() {
      calls = {};
      requests = 0;
    },
  };
}

/** Reads a proxy's counters over HTTP (the proxy usually runs in its own process). */
export async function readProxyStats(url: string): Promise<RpcProxyStats> {
  const response = await fetch(`${url}/__stats`);
  return (await response.json()) as RpcProxyStats;
}

export async function resetProxyStats(url: string): Promise<void> {
  await fetch(`${url}/__reset`, { method: "POST" });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const target = process.env.RPC_PROXY_TARGET;
  if (target === undefined) {
    console.error("RPC_PROXY_TARGET is required (the JSON-RPC URL to forward to)");
    process.exit(2);
  }
  const delayMs = Number(process.env.RPC_DELAY_MS ?? DEFAULT_RPC_DELAY_MS);
  if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > 10_000) {
    console.error("RPC_DELAY_MS must be a number of milliseconds between 0 and 10000");
    process.exit(2);
  }
  const proxy = await startRpcProxy({ target, delayMs, port: Number(process.env.PORT ?? 0) });
  console.log(`LISTENING ${proxy.port}`);
  const stop = () => {
    void proxy.close().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
