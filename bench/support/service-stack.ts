import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalStack, startLocalStack } from "../../local/local-stack.js";
import { findFreePort } from "../../local/ports.js";
import { type ChildServer, startChildServer } from "./processes.js";

export type BenchStack = {
  stack: LocalStack;
  /** Anvil itself (the bench's own clients talk to it directly). */
  anvilUrl: string;
  /** A zero-delay counting proxy between the service and Anvil (LOCAL_RPC_URL). */
  serviceRpcCounter: ChildServer;
  baseUrl: () => string;
  partnerFetch: (path: string, init?: { method?: string; json?: unknown }) => Promise<Response>;
  stop: () => Promise<void>;
};

/**
 * A local stack in a temporary data directory whose service reaches Anvil
 * through a counting proxy, so the benchmark can tell which RPC calls the
 * service itself made (Ponder's indexing goes through the same proxy).
 */
export async function startBenchStack(options: { blockTime?: number; env?: NodeJS.ProcessEnv }): Promise<BenchStack> {
  const dataDir = mkdtempSync(join(tmpdir(), "settlement-bench-"));
  const anvilPort = await findFreePort();
  const anvilUrl = `http://127.0.0.1:${anvilPort}`;
  const serviceRpcCounter = await startChildServer("rpc-delay-proxy.ts", { RPC_PROXY_TARGET: anvilUrl, RPC_DELAY_MS: "0" });
  let stack: LocalStack;
  try {
    stack = await startLocalStack({
      dataDir,
      anvilPort,
      blockTime: options.blockTime,
      env: { LOCAL_RPC_URL: serviceRpcCounter.url, ...options.env },
    });
  } catch (error) {
    await serviceRpcCounter.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const baseUrl = () => stack.ponder.baseUrl;
  return {
    stack,
    anvilUrl,
    serviceRpcCounter,
    baseUrl,
    partnerFetch(path, init = {}) {
      return fetch(`${baseUrl()}${path}`, {
        method: init.method ?? (init.json === undefined ? "GET" : "POST"),
        headers: {
          Authorization: `Bearer ${stack.local.partner.apiKey}`,
          ...(init.json === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });
    },
    async stop() {
      await stack.stop();
      await serviceRpcCounter.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let sessionCounter = 0;

/** A checkout-session creation body (docs/quick-start.md) with a fresh order id and idempotency key. */
export function sessionBody(runId: string, totalPriceUsdc = "25000000") {
  const externalOrderId = `bench-${runId}-${++sessionCounter}`;
  return {
    externalOrderId,
    externalProductId: "sku-bench",
    productName: "Benchmark item",
    productCategory: "apparel",
    quantity: 1,
    totalPriceUsdc,
    shippingRequired: false,
    paymentMethod: "usdc",
    checkoutMode: "hosted_transfer",
    certificate: { enabled: false },
    idempotencyKey: `create-${externalOrderId}`,
  };
}

export type CreatedSession = {
  id: string;
  clientToken: string;
  orderId: string;
  status: string;
  payment: { tokenAddress: string; recipient: string; amount: string };
};
