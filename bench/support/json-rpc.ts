/** A minimal JSON-RPC client over fetch (keep-alive through Node's global dispatcher). */
export type RpcCall = (method: string, params?: unknown[]) => Promise<unknown>;

export class RpcError extends Error {
  override name = "RpcError";
}

let nextId = 1;

export function jsonRpc(url: string): RpcCall {
  return async (method, params = []) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
    });
    const text = await response.text();
    if (!response.ok) throw new RpcError(`${method}: HTTP ${response.status} ${text.slice(0, 200)}`);
    const body = JSON.parse(text) as { result?: unknown; error?: { message: string } };
    if (body.error !== undefined) throw new RpcError(`${method}: ${body.error.message}`);
    return body.result;
  };
}
