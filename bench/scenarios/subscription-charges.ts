import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
  parseSignature,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { subscriptionManagerAbi } from "../../contracts/generated/SubscriptionManager.js";
import { localChain } from "../../local/deploy.js";
import { type BlockWatcher, startBlockWatcher } from "../support/block-watcher.js";
import type { MemorySampler } from "../support/memory.js";
import type { BenchStack } from "../support/service-stack.js";
import { roundSummary, type Summary, sleep, summarize } from "../support/stats.js";
import { startBenchReceiver } from "../support/webhook-receiver.js";

export type SubscriptionChargesResult = {
  subscriptions: number;
  /** How many the worker turned `active` before the common start (their `Subscribed` indexed). */
  activated: number;
  /** How many `subscription.charged` arrived for period 0 within the wait. */
  charged: number;
  /** Charges mined ÷ (block with the last charge seen − block of the period's start seen): a floor of the worker's send rate. */
  submittedPerS: number | null;
  /** The block whose time is the common start seen → the charge's transaction in a block seen. */
  startToMined: Summary | undefined;
  /** The block whose time is the common start seen → `subscription.charged` at the receiver. */
  startToCharged: Summary | undefined;
  waitedForChargesMs: number;
  peakRssBytes: number | undefined;
};

type Planned = {
  id: string;
  customer: ReturnType<typeof privateKeyToAccount>;
  minedAt?: number;
  chargedAt?: number;
  transactionHash?: string;
};

type TermsAnswer = {
  terms: {
    subscriber: Address;
    payee: Address;
    token: Address;
    amount: string;
    period: number | string;
    start: number | string;
    end: number | string;
    salt: string;
  };
  typedData: {
    domain: Record<string, unknown>;
    types: Record<string, unknown>;
    primaryType: string;
    message: Record<string, unknown>;
  };
  permit: { value: string; deadline: string; typedData: TermsAnswer["typedData"] };
};

const AMOUNT = 1_000_000n;

/**
 * 1,000 active subscriptions whose first period starts at the same chain second (issue 44): the
 * partner creates them with one `startAt` an hour of chain time ahead, each customer (a new wallet
 * holding one period's USDC) signs the terms and the permit the service issues, and the bench
 * registers them on chain itself (anyone may send `subscribeWithPermit`; the setup is no part of the
 * figure and spends none of the partner's relay quota). Once the worker has activated what it
 * will, the next block is stamped with the common start: from that block on every subscription is
 * due, and the worker charges them through the relayer. Measured: how fast the charges reach the
 * chain, and the delay from the start's block to `subscription.charged` at a webhook receiver.
 */
export async function measureSubscriptionCharges(params: {
  bench: BenchStack;
  subscriptions: number;
  timeoutMs: number;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<SubscriptionChargesResult> {
  const { bench, log } = params;
  const { local } = bench.stack;
  const chain = localChain({ rpcUrl: bench.anvilUrl, chainId: local.chainId });
  const client = createPublicClient({ chain, transport: http(bench.anvilUrl), pollingInterval: 50 }) as PublicClient;
  const testClient = createTestClient({ chain, mode: "anvil", transport: http(bench.anvilUrl) });
  const manager = local.contracts.subscriptionManager as Address;
  const byId = new Map<string, Planned>();
  const receiver = await startBenchReceiver((event) => {
    if (event.type !== "subscription.charged") return;
    const planned = byId.get(String(event.data.subscriptionId));
    if (planned !== undefined && planned.chargedAt === undefined) {
      planned.chargedAt = event.receivedAt;
      planned.transactionHash = String(event.data.transactionHash).toLowerCase();
    }
  });
  let watcher: BlockWatcher | undefined;
  try {
    const registration = await bench.partnerFetch("/v1/webhook-endpoints", {
      json: { url: receiver.url, events: ["subscription.charged"] },
    });
    if (registration.status !== 201) throw new Error(`webhook endpoint registration answered ${registration.status}`);
    receiver.setSecret(((await registration.json()) as { secret: string }).secret);

    const latest = await client.getBlock({ blockTag: "latest" });
    const start = Number(latest.timestamp) + 3_600;
    const runId = randomUUID().slice(0, 8);
    const planned: Planned[] = [];
    const termsOf = new Map<string, TermsAnswer>();
    const prepare = async (index: number) => {
      const created = await bench.partnerFetch("/v1/subscriptions", {
        json: {
          externalCustomerId: `bench-${runId}-${index}`,
          productName: "Benchmark plan",
          amount: AMOUNT.toString(),
          interval: "day",
          startAt: new Date(start * 1000).toISOString(),
          idempotencyKey: `bench-sub-${runId}-${index}`,
        },
      });
      if (created.status !== 201) throw new Error(`create subscription: ${created.status} ${await created.text()}`);
      const body = (await created.json()) as { id: string; clientToken: string };
      const customer = privateKeyToAccount(generatePrivateKey());
      const terms = await fetch(`${bench.baseUrl()}/v1/public/subscriptions/${body.id}/terms`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ clientToken: body.clientToken, subscriber: customer.address }),
      });
      if (terms.status !== 200) throw new Error(`terms: ${terms.status} ${await terms.text()}`);
      termsOf.set(body.id, (await terms.json()) as TermsAnswer);
      const item: Planned = { id: body.id, customer };
      planned[index] = item;
      byId.set(body.id, item);
    };
    // A few at a time, as shops would create them: the setup is not measured.
    for (let index = 0; index < params.subscriptions; index += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, params.subscriptions - index) }, (_, offset) => prepare(index + offset)),
      );
    }
    log(
      `  ${planned.length} subscriptions created, their terms issued (common start ${new Date(start * 1000).toISOString()} chain time)`,
    );

    // Each customer holds one period's USDC; the bench sends every registration from one funded account.
    const sender = privateKeyToAccount(local.accounts[9]!.privateKey as Hex);
    const wallet = createWalletClient({ account: sender, chain, transport: http(bench.anvilUrl) });
    let nonce = await client.getTransactionCount({ address: sender.address, blockTag: "pending" });
    const sent: Hex[] = [];
    for (const item of planned) {
      const answer = termsOf.get(item.id) as TermsAnswer;
      const signature = await item.customer.signTypedData(signable(answer.typedData));
      const permit = parseSignature(await item.customer.signTypedData(signable(answer.permit.typedData)));
      sent.push(
        await wallet.writeContract({
          address: local.contracts.usdc as Address,
          abi: erc20Abi,
          functionName: "transfer",
          args: [item.customer.address, AMOUNT],
          nonce: nonce++,
        }),
      );
      const terms = answer.terms;
      sent.push(
        await wallet.sendTransaction({
          to: manager,
          nonce: nonce++,
          gas: 300_000n,
          data: encodeFunctionData({
            abi: subscriptionManagerAbi,
            functionName: "subscribeWithPermit",
            args: [
              {
                subscriber: terms.subscriber,
                payee: terms.payee,
                token: terms.token,
                amount: BigInt(terms.amount),
                period: Number(terms.period),
                start: Number(terms.start),
                end: Number(terms.end),
                salt: BigInt(terms.salt),
              },
              signature,
              BigInt(answer.permit.value),
              BigInt(answer.permit.deadline),
              Number(permit.v),
              permit.r,
              permit.s,
            ],
          }),
        }),
      );
    }
    for (const hash of sent) {
      const receipt = await client.waitForTransactionReceipt({ hash, timeout: 120_000 });
      if (receipt.status !== "success") throw new Error(`setup transaction ${hash} reverted`);
    }
    log(`  ${planned.length} customers funded and registered on chain (${sent.length} transactions)`);

    // The worker activates what it follows; wait until the count stops growing (or all are active).
    let activated = 0;
    let steadySince = performance.now();
    const activationDeadline = performance.now() + params.timeoutMs;
    while (performance.now() < activationDeadline) {
      const count = await countActive(bench);
      if (count !== activated) {
        activated = count;
        steadySince = performance.now();
      }
      if (activated >= planned.length || performance.now() - steadySince > 20_000) break;
      await sleep(1_000);
    }
    log(`  ${activated} of ${planned.length} active before the start`);

    watcher = await startBlockWatcher(bench.anvilUrl);
    params.memory.begin("subscriptions");
    const before = await client.getBlockNumber({ cacheTime: 0 });
    await testClient.setNextBlockTimestamp({ timestamp: BigInt(start) });
    await testClient.mine({ blocks: 1 });
    const startBlock = Number(before) + 1;
    const startSeenAt = await watcher.waitForBlock(startBlock, 10_000);
    if (startSeenAt === undefined) throw new Error("the start's block was not seen");
    const waitStarted = performance.now();
    const deadline = waitStarted + params.timeoutMs;
    let lastProgress = performance.now();
    let lastCount = 0;
    while (performance.now() < deadline) {
      const count = planned.filter((item) => item.chargedAt !== undefined).length;
      if (count !== lastCount) {
        lastCount = count;
        lastProgress = performance.now();
      }
      // All charged, or nothing new for a minute: what is left will not come in this run.
      if (count >= planned.length || performance.now() - lastProgress > 60_000) break;
      await sleep(200);
    }
    const waitedForChargesMs = performance.now() - waitStarted;
    const peakRssBytes = await params.memory.end("subscriptions");

    const charged = planned.filter((item) => item.chargedAt !== undefined);
    for (const item of charged) {
      const block = watcher.blockOf(item.transactionHash as string);
      if (block !== undefined) item.minedAt = watcher.seenAt(block);
    }
    const mined = charged.filter((item) => item.minedAt !== undefined);
    const lastMined = Math.max(...mined.map((item) => item.minedAt as number));
    const submittedPerS =
      mined.length === 0 || lastMined <= startSeenAt
        ? null
        : Math.round((mined.length / ((lastMined - startSeenAt) / 1000)) * 10) / 10;
    return {
      subscriptions: planned.length,
      activated,
      charged: charged.length,
      submittedPerS,
      startToMined:
        mined.length === 0 ? undefined : roundSummary(summarize(mined.map((item) => (item.minedAt as number) - startSeenAt))),
      startToCharged:
        charged.length === 0
          ? undefined
          : roundSummary(summarize(charged.map((item) => (item.chargedAt as number) - startSeenAt))),
      waitedForChargesMs: Math.round(waitedForChargesMs),
      peakRssBytes,
    };
  } finally {
    await watcher?.stop();
    await receiver.close();
  }
}

async function countActive(bench: BenchStack): Promise<number> {
  let count = 0;
  let cursor: string | null = null;
  do {
    const query = `/v1/subscriptions?status=active&limit=500${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const page = (await (await bench.partnerFetch(query)).json()) as { data: unknown[]; nextCursor: string | null };
    count += page.data.length;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return count;
}

/** viem wants the typed data's numbers as bigints; the service sends them as JSON strings. */
function signable(typedData: TermsAnswer["typedData"]) {
  const message = Object.fromEntries(
    Object.entries(typedData.message).map(([key, value]) => [
      key,
      typeof value === "string" && /^\d+$/.test(value) ? BigInt(value) : value,
    ]),
  );
  const domain = { ...typedData.domain, chainId: Number(typedData.domain.chainId) };
  return { ...typedData, domain, message } as unknown as Parameters<ReturnType<typeof privateKeyToAccount>["signTypedData"]>[0];
}
