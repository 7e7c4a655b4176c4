import { randomUUID } from "node:crypto";
import type { Address, Hex } from "viem";
import type { TestStack } from "./test-stack.js";

export type CreatedSession = {
  id: string;
  clientToken: string;
  status: string;
  expiresAt: string;
  orderId: string;
  purchaseId: string;
  externalOrderId: string;
  network: string;
  chainId: number;
  payment: {
    token: string;
    tokenAddress: Address;
    recipient: Address;
    amount: string;
    totalPriceUsdc: string;
    decimals: number;
    uri: string;
  };
};

export function sessionBody(overrides: Record<string, unknown> = {}) {
  const externalOrderId = `order-${randomUUID()}`;
  return {
    externalOrderId,
    externalProductId: "sku-tee-blue",
    productName: "Blue tee",
    productCategory: "apparel",
    quantity: 1,
    totalPriceUsdc: "25000000",
    shippingRequired: true,
    paymentMethod: "usdc",
    checkoutMode: "hosted_transfer",
    certificate: { enabled: true },
    idempotencyKey: `create-${externalOrderId}`,
    ...overrides,
  };
}

export async function createSession(stack: TestStack, overrides: Record<string, unknown> = {}): Promise<CreatedSession> {
  const response = await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: sessionBody(overrides) });
  if (response.status !== 201 && response.status !== 200)
    throw new Error(`create session: ${response.status} ${await response.text()}`);
  return (await response.json()) as CreatedSession;
}

export function publicPost(stack: TestStack, path: string, body: unknown): Promise<Response> {
  return fetch(`${stack.ponder.baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

export function submitHash(stack: TestStack, clientToken: string, transactionHash: Hex): Promise<Response> {
  return publicPost(stack, "/v1/public/checkout/payments", { clientToken, transactionHash });
}

export async function readSession(stack: TestStack, id: string) {
  const response = await stack.partnerFetch(`/v1/checkout/sessions/${id}`);
  return (await response.json()) as CreatedSession & { status: string };
}

export async function readOrder(stack: TestStack, orderId: string) {
  const response = await stack.partnerFetch(`/v1/orders/${orderId}`);
  // biome-ignore lint/suspicious/noExplicitAny: tests read the answer loosely and assert its shape
  return (await response.json()) as Record<string, any>;
}

/** Every event the service recorded for the demo partner, oldest first (straight from the outbox table). */
export async function outboxEvents(stack: TestStack, store: import("../../api/store/open-store.js").Store) {
  const rows = await store
    .selectFrom("event")
    .selectAll()
    .where("partner_id", "=", stack.local.partner.id)
    .orderBy("seq")
    .execute();
  // biome-ignore lint/suspicious/noExplicitAny: event data differs per type; tests assert its shape
  return rows.map((row) => JSON.parse(row.payload) as { id: string; type: string; data: Record<string, any> });
}
