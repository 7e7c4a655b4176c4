import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

type JsonRpcRequest = { jsonrpc: "2.0"; id: unknown; method: string; params?: unknown[] };

/**
 * A JSON-RPC relay in front of Anvil that can hold the indexer back: while held,
 * `eth_getBlockByNumber("latest")` answers the block that was latest when the
 * hold began, so Ponder sees no new block, while every other call (receipts,
 * blocks by number, sending transactions) reaches the real chain. This is an
 * indexer lagging behind the chain, the window in which a transfer is mined but
 * not yet indexed.
 */
export type RpcGate = {
  url: string;
  hold: () => Promise<void>;
  release: () => void;
  stop: () => Promise<void>;
};

export async function startRpcGate(target: () => string): Promise<RpcGate> {
  /** The latest block when the hold began, without and with full transactions. */
  let heldLatest: Map<boolean, unknown> | undefined;

  const forward = async (request: JsonRpcRequest): Promise<unknown> => {
    const response = await fetch(target(), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
    return response.json();
  };
  const answer = (request: JsonRpcRequest): Promise<unknown> => {
    const asksLatest = request.method === "eth_getBlockByNumber" && request.params?.[0] === "latest";
    if (asksLatest && heldLatest !== undefined) {
      return Promise.resolve({ jsonrpc: "2.0", id: request.id, result: heldLatest.get(request.params?.[1] === true) });
    }
    return forward(request);
  };

  const server = createServer(async (req, res) => {
    try {
      const body = JSON.parse(await readBody(req)) as JsonRpcRequest | JsonRpcRequest[];
      const reply = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body);
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(reply));
    } catch (error) {
      res.writeHead(502).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    async hold() {
      // One block for both forms: ask for the full one by number after learning the number.
      const latest = (await forward({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["latest", false] })) as {
        result: { number: string };
      };
      const full = (await forward({
        jsonrpc: "2.0",
        id: 2,
        method: "eth_getBlockByNumber",
        params: [latest.result.number, true],
      })) as { result: unknown };
      heldLatest = new Map([
        [false, latest.result],
        [true, full.result],
      ]);
    },
    release() {
      heldLatest = undefined;
    },
    stop: () =>
      new Promise<void>((resolve) => {
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
