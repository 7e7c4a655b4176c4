import { type Address, createWalletClient, encodeFunctionData, erc20Abi, type Hex, http, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { expect } from "vitest";
import type { Store } from "../../api/store/open-store.js";
import { type CreatedSession, createSession, outboxEvents, readSession } from "./checkout-helpers.js";
import type { TestStack } from "./test-stack.js";
import { waitFor } from "./test-stack.js";
import type { WebhookReceiver } from "./webhook-receiver.js";

/** The fault: 16 payments in flight while the node is frozen (SIGSTOP) for 30 s. */
export const PAYMENTS_IN_FLIGHT = 16;
export const FREEZE_MS = 30_000;

export type Health = {
  status: "ok" | "degraded";
  chains: { indexedBlock: string | null; chainHead: string | null; indexer: { state: string } }[];
  reasons: { code: string; check: string; detail: string }[];
};

export async function readHealth(stack: TestStack): Promise<{ httpStatus: number; body: Health }> {
  const response = await fetch(`${stack.ponder.baseUrl}/v1/health`);
  return { httpStatus: response.status, body: (await response.json()) as Health };
}

export async function createSessions(stack: TestStack, count = PAYMENTS_IN_FLIGHT): Promise<CreatedSession[]> {
  const sessions: CreatedSession[] = [];
  for (let index = 0; index < count; index++) sessions.push(await createSession(stack, { certificate: { enabled: false } }));
  return sessions;
}

/**
 * Signs one exact payment per session, from Anvil accounts 1..8 (two each, with
 * consecutive nonces), so they can be sent at any moment, even to a frozen node.
 */
export async function signPayments(stack: TestStack, sessions: CreatedSession[]): Promise<Hex[]> {
  const payers = [1, 2, 3, 4, 5, 6, 7, 8].map((index) => privateKeyToAccount(stack.local.accounts[index]?.privateKey as Hex));
  const nonces = await Promise.all(payers.map((payer) => stack.publicClient.getTransactionCount({ address: payer.address })));
  return Promise.all(
    sessions.map((session, index) => {
      const payer = payers[index % payers.length] as (typeof payers)[number];
      return payer.signTransaction({
        chainId: stack.chain.id,
        type: "eip1559",
        to: stack.local.contracts.usdc as Address,
        nonce: (nonces[index % payers.length] as number) + Math.floor(index / payers.length),
        gas: 100_000n,
        maxFeePerGas: 10_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: "transfer",
          args: [session.payment.recipient, BigInt(session.payment.amount)],
        }),
      });
    }),
  );
}

/**
 * Sends half the payments, freezes Anvil (SIGSTOP) while the indexer is fetching
 * them, sends the other half into the frozen node, runs `during` while frozen,
 * keeps the node frozen for `freezeMs` in all, then resumes it (SIGCONT).
 * Returns the hashes once every payment is accepted by the node.
 */
export async function payThroughOutage(
  stack: TestStack,
  sessions: CreatedSession[],
  options: { freezeMs?: number; during?: (pending: Hex[]) => Promise<void> } = {},
): Promise<Hex[]> {
  const signed = await signPayments(stack, sessions);
  // A client that waits for a frozen node instead of timing out and resending.
  const patient = createWalletClient({
    chain: stack.chain,
    transport: http(stack.local.rpcUrl, { timeout: 300_000, retryCount: 0 }),
  });
  const half = Math.floor(signed.length / 2);
  const first = await Promise.all(signed.slice(0, half).map((tx) => patient.sendRawTransaction({ serializedTransaction: tx })));
  const frozenAt = Date.now();
  stack.anvil.process.kill("SIGSTOP");
  let second: Promise<Hex[]>;
  try {
    second = Promise.all(signed.slice(half).map((tx) => patient.sendRawTransaction({ serializedTransaction: tx })));
    second.catch(() => undefined);
    await options.during?.(signed.slice(half).map((tx) => keccak256(tx)));
    const left = (options.freezeMs ?? FREEZE_MS) - (Date.now() - frozenAt);
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  } finally {
    stack.anvil.process.kill("SIGCONT");
  }
  return [...first, ...(await second)];
}

/** Every session settled, each by exactly one payment, each with exactly one `purchase.settled`, each delivered. */
export async function expectEverySettledOnce(params: {
  stack: TestStack;
  store: Store;
  sessions: CreatedSession[];
  hashes: Hex[];
  receiver: WebhookReceiver;
  timeoutMs?: number;
}) {
  const { stack, store, sessions, receiver } = params;
  await waitFor(
    async () => {
      const statuses = await Promise.all(sessions.map((session) => readSession(stack, session.id).then((read) => read.status)));
      return statuses.every((status) => status === "settled") ? true : undefined;
    },
    { timeoutMs: params.timeoutMs ?? 60_000, intervalMs: 500, what: `all ${sessions.length} sessions to settle` },
  );
  const payments = await store
    .selectFrom("payment")
    .select(["session_id", "transaction_hash", "status"])
    .where(
      "session_id",
      "in",
      sessions.map((session) => session.id),
    )
    .execute();
  expect(payments).toHaveLength(sessions.length);
  expect(new Set(payments.map((payment) => payment.session_id)).size).toBe(sessions.length);
  expect(payments.every((payment) => payment.status === "settled")).toBe(true);
  expect(new Set(payments.map((payment) => payment.transaction_hash))).toEqual(
    new Set(params.hashes.map((hash) => hash.toLowerCase())),
  );

  const sessionIds = new Set(sessions.map((session) => session.id));
  const settledEvents = (await outboxEvents(stack, store)).filter(
    (event) => event.type === "purchase.settled" && sessionIds.has(event.data.sessionId),
  );
  expect(settledEvents).toHaveLength(sessions.length);
  expect(new Set(settledEvents.map((event) => event.data.sessionId)).size).toBe(sessions.length);
  const wanted = new Set(settledEvents.map((event) => event.id));
  await waitFor(
    async () => {
      const delivered = new Set(receiver.acknowledged.map((request) => request.eventId).filter((id) => wanted.has(id)));
      return delivered.size === wanted.size ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: "every purchase.settled delivered to the receiver" },
  );
}
