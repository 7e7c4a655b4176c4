import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { type Address, createPublicClient, createWalletClient, erc20Abi, type Hex, http, type PublicClient, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { readTokenDomain, transferAuthorizationTypedData } from "../../api/gasless/eip3009.js";
import { localChain } from "../../local/deploy.js";
import type { MemorySampler } from "../support/memory.js";
import { type BenchStack, type CreatedSession, sessionBody } from "../support/service-stack.js";
import { roundSummary, type Summary, sleep, summarize } from "../support/stats.js";
import { startBenchReceiver } from "../support/webhook-receiver.js";

export type GaslessResult = {
  purchases: number;
  settled: number;
  payRatePerS: number;
  /** Signed authorization received (POST sent) → answer with the transaction hash (checks, store, relayer's send). */
  receivedToSubmitted: Summary;
  /** That answer → purchase.settled at the webhook receiver (block, confirmations, index, settlement, webhook). */
  submittedToSettled: Summary;
  receivedToSettled: Summary;
  /** Gas used by one relayed transferWithAuthorization (from the order's `payment.relay`). */
  gasUsedPerPayment: Summary | undefined;
  peakRssBytes: number | undefined;
};

type Payment = {
  session: CreatedSession & { expiresAt: string };
  body: unknown;
  receivedAt?: number;
  submittedAt?: number;
  settledAt?: number;
};

/**
 * Gasless payment: each purchase's customer holds USDC and no ETH and signs an
 * EIP-3009 authorization in advance; the bench posts it to
 * `/v1/public/checkout/sessions/:id/authorizations` and times the answer (the
 * relayer's transaction sent) and `purchase.settled` arriving at a webhook
 * receiver, on the same chain settings as the plain-transfer latency run.
 */
export async function measureGaslessPayment(params: {
  bench: BenchStack;
  purchases: number;
  payRatePerS: number;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<GaslessResult> {
  const { bench, log } = params;
  const runId = `gasless-${randomUUID().slice(0, 8)}`;
  const byOrder = new Map<string, Payment>();
  const receiver = await startBenchReceiver((event) => {
    if (event.type !== "purchase.settled") return;
    const payment = byOrder.get(String(event.data.orderId));
    if (payment !== undefined && payment.settledAt === undefined) payment.settledAt = event.receivedAt;
  });
  try {
    const registration = await bench.partnerFetch("/v1/webhook-endpoints", {
      json: { url: receiver.url, events: ["purchase.settled"] },
    });
    if (registration.status !== 201) throw new Error(`webhook endpoint registration answered ${registration.status}`);
    receiver.setSecret(((await registration.json()) as { secret: string }).secret);

    const { local } = bench.stack;
    const chain = localChain({ rpcUrl: bench.anvilUrl, chainId: local.chainId });
    const client = createPublicClient({ chain, transport: http(bench.anvilUrl), pollingInterval: 50 }) as PublicClient;
    const usdc = local.contracts.usdc as Address;
    const domain = await readTokenDomain(client, { token: usdc, chainId: local.chainId });

    // Sessions and USDC-only payers first: none of it is part of a payment's latency.
    const funder = privateKeyToAccount(local.accounts[9]!.privateKey as Hex);
    const funderWallet = createWalletClient({ account: funder, chain, transport: http(bench.anvilUrl) });
    let nonce = await client.getTransactionCount({ address: funder.address, blockTag: "pending" });
    const payments: Payment[] = [];
    const fundings: Hex[] = [];
    for (let index = 0; index < params.purchases; index++) {
      const response = await bench.partnerFetch("/v1/checkout/sessions", { json: sessionBody(runId, "9000000") });
      if (response.status !== 201) throw new Error(`create session: ${response.status} ${await response.text()}`);
      const session = (await response.json()) as Payment["session"];
      const payer = privateKeyToAccount(generatePrivateKey());
      fundings.push(
        await funderWallet.writeContract({
          address: usdc,
          abi: erc20Abi,
          functionName: "transfer",
          args: [payer.address, BigInt(session.payment.amount)],
          nonce: nonce++,
        }),
      );
      const authorization = {
        from: payer.address,
        to: session.payment.recipient as Address,
        value: BigInt(session.payment.amount),
        validAfter: 0n,
        validBefore: BigInt(Math.floor(Date.parse(session.expiresAt) / 1000)),
        nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
      };
      const signature = await payer.signTypedData(transferAuthorizationTypedData(domain, authorization));
      const payment: Payment = {
        session,
        body: {
          clientToken: session.clientToken,
          authorization: {
            ...authorization,
            value: authorization.value.toString(),
            validAfter: "0",
            validBefore: authorization.validBefore.toString(),
          },
          signature,
        },
      };
      payments.push(payment);
      byOrder.set(session.orderId, payment);
    }
    await Promise.all(fundings.map((hash) => client.waitForTransactionReceipt({ hash })));
    log(`  ${payments.length} sessions, each with a payer holding USDC and no ETH`);

    params.memory.begin("gasless");
    const spacingMs = 1000 / params.payRatePerS;
    const start = performance.now() + 200;
    const posts: Promise<void>[] = [];
    for (const [index, payment] of payments.entries()) {
      const wait = start + index * spacingMs - performance.now();
      if (wait > 0) await sleep(wait);
      payment.receivedAt = performance.now();
      posts.push(
        fetch(`${bench.baseUrl()}/v1/public/checkout/sessions/${payment.session.id}/authorizations`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(payment.body),
        }).then(async (response) => {
          const text = await response.text();
          if (response.status !== 200) throw new Error(`authorization answered ${response.status}: ${text}`);
          payment.submittedAt = performance.now();
        }),
      );
    }
    await Promise.all(posts);
    const deadline = performance.now() + 60_000;
    while (payments.some((payment) => payment.settledAt === undefined) && performance.now() < deadline) await sleep(50);
    const peakRssBytes = await params.memory.end("gasless");

    const complete = payments.filter((payment) => payment.settledAt !== undefined) as Required<Payment>[];
    const of = (pick: (payment: Required<Payment>) => number) => roundSummary(summarize(complete.map(pick)));
    const gasUsed: number[] = [];
    for (const payment of complete) {
      const order = (await (await bench.partnerFetch(`/v1/orders/${payment.session.orderId}`)).json()) as {
        payment?: { relay?: { gasUsed?: string | null } };
      };
      const used = order.payment?.relay?.gasUsed;
      if (used) gasUsed.push(Number(used));
    }
    return {
      purchases: payments.length,
      settled: complete.length,
      payRatePerS: params.payRatePerS,
      receivedToSubmitted: of((payment) => payment.submittedAt - payment.receivedAt),
      submittedToSettled: of((payment) => payment.settledAt - payment.submittedAt),
      receivedToSettled: of((payment) => payment.settledAt - payment.receivedAt),
      gasUsedPerPayment: gasUsed.length === 0 ? undefined : roundSummary(summarize(gasUsed)),
      peakRssBytes,
    };
  } finally {
    await receiver.close();
  }
}
