import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";
import { decodeEventLog, erc20Abi, type Hex, isHash } from "viem";
import { listenOnLoopback } from "./support/loopback-server.js";

/**
 * The baseline the hash-submission benchmark compares against: a verifier that
 * keeps no index and checks every submitted hash with RPC calls made for that
 * request. It answers the same route and body as the service
 * (`POST /v1/public/checkout/payments {clientToken, transactionHash}`) so that
 * autocannon drives both the same way.
 *
 * Per request: `eth_getTransactionReceipt` and `eth_blockNumber` (in parallel,
 * one round trip), then: receipt exists, status success, a `Transfer` log of the
 * canonical token to the session's recipient for the exact amount, and enough
 * confirmations. It is deliberately generous to itself: the expected recipient
 * and amount per client token are held in memory (no database), and it skips the
 * time-window and replay checks, which would cost a block fetch and a store.
 *
 * Env: RPC_URL, TARGETS_FILE (JSON written by the benchmark), PORT (0 = any).
 */
export type BaselineTargets = {
  tokenAddress: string;
  requiredConfirmations: number;
  sessions: Record<string, { recipient: string; amount: string }>;
};

type Receipt = {
  status: Hex;
  blockNumber: Hex;
  logs: { address: string; topics: [Hex, ...Hex[]]; data: Hex }[];
};

export async function startBaselineVerifier(options: { rpcUrl: string; targets: BaselineTargets; port?: number }) {
  const token = options.targets.tokenAddress.toLowerCase();
  const sessions = new Map(
    Object.entries(options.targets.sessions).map(([clientToken, expected]) => [
      clientToken,
      { recipient: expected.recipient.toLowerCase(), amount: BigInt(expected.amount) },
    ]),
  );
  let rpcCalls = 0;
  let verified = 0;
  let id = 0;

  const rpc = async (method: string, params: unknown[]) => {
    rpcCalls++;
    const response = await fetch(options.rpcUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    const body = (await response.json()) as { result?: unknown; error?: { message: string } };
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  };

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "Content-Type": status >= 400 ? "application/problem+json" : "application/json" });
    res.end(JSON.stringify(body));
  };
  const reject = (res: ServerResponse, status: number, reason: string) => answer(res, status, { status, code: reason, reason });

  const verify = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.url === "/__stats") return answer(res, 200, { rpcCalls, verified });
    if (req.method !== "POST" || req.url !== "/v1/public/checkout/payments") return reject(res, 404, "not_found");

    let body: { clientToken?: unknown; transactionHash?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return reject(res, 400, "invalid_request");
    }
    const expected = typeof body.clientToken === "string" ? sessions.get(body.clientToken) : undefined;
    if (expected === undefined) return reject(res, 401, "invalid_client_token");
    if (typeof body.transactionHash !== "string" || !isHash(body.transactionHash)) return reject(res, 400, "invalid_request");
    const transactionHash = body.transactionHash.toLowerCase() as Hex;

    const [receipt, head] = (await Promise.all([
      rpc("eth_getTransactionReceipt", [transactionHash]),
      rpc("eth_blockNumber", []),
    ])) as [Receipt | null, Hex];
    if (receipt === null) return reject(res, 404, "not_found");
    if (receipt.status !== "0x1") return reject(res, 422, "reverted");

    let paid = false;
    let toRecipient = false;
    let canonical = false;
    for (const log of receipt.logs) {
      let decoded: ReturnType<typeof decodeEventLog<typeof erc20Abi, "Transfer">>;
      try {
        decoded = decodeEventLog({ abi: erc20Abi, eventName: "Transfer", topics: log.topics, data: log.data });
      } catch {
        continue;
      }
      if (log.address.toLowerCase() !== token) continue;
      canonical = true;
      if (decoded.args.to.toLowerCase() !== expected.recipient) continue;
      toRecipient = true;
      if (decoded.args.value === expected.amount) paid = true;
    }
    if (!paid) return reject(res, 422, toRecipient ? "wrong_amount" : canonical ? "wrong_recipient" : "wrong_token");

    const confirmations = Number(BigInt(head) - BigInt(receipt.blockNumber) + 1n);
    const settled = confirmations >= options.targets.requiredConfirmations;
    verified++;
    return answer(res, 200, {
      status: settled ? "settled" : "payment_pending",
      transactionHash,
      confirmations,
      requiredConfirmations: options.targets.requiredConfirmations,
    });
  };

  const server = createServer((req, res) => {
    verify(req, res).catch((error) => {
      if (!res.headersSent) answer(res, 502, { status: 502, code: "rpc_failed", detail: String(error) });
      else res.destroy();
    });
  });
  return listenOnLoopback(server, options.port);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rpcUrl = process.env.RPC_URL;
  const targetsFile = process.env.TARGETS_FILE;
  if (rpcUrl === undefined || targetsFile === undefined) {
    console.error("RPC_URL and TARGETS_FILE are required");
    process.exit(2);
  }
  const targets = JSON.parse(readFileSync(targetsFile, "utf8")) as BaselineTargets;
  const verifier = await startBaselineVerifier({ rpcUrl, targets, port: Number(process.env.PORT ?? 0) });
  console.log(`LISTENING ${verifier.port}`);
  const stop = () => {
    void verifier.close().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
