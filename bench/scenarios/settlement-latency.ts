import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { type Address, createWalletClient, encodeFunctionData, erc20Abi, type Hex, http, keccak256, parseGwei } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { localChain } from "../../local/deploy.js";
import { startBlockWatcher } from "../support/block-watcher.js";
import { startIndexWatcher } from "../support/index-watcher.js";
import { jsonRpc } from "../support/json-rpc.js";
import type { MemorySampler } from "../support/memory.js";
import { type BenchStack, type CreatedSession, sessionBody } from "../support/service-stack.js";
import { roundSummary, type Summary, sleep, summarize } from "../support/stats.js";
import { startBenchReceiver } from "../support/webhook-receiver.js";

export type Purchase = {
  session: CreatedSession;
  rawTransaction: Hex;
  transactionHash: Hex;
  sentAt?: number;
  acceptedAt?: number;
  settledAt?: number;
  /** When the service recorded the settlement (the event's `settledAt`, same machine clock, 1 ms resolution). */
  recordedAt?: number;
  /** When the service's index first stood at the confirming block. */
  indexedAt?: number;
  blockNumber?: number;
  minedAt?: number;
  confirmedAt?: number;
};

export type LatencyResult = {
  /** What "settled" was observed as. */
  measuredAt: "webhook" | "api";
  measuredAtNote: string;
  purchases: number;
  settled: number;
  missing: number;
  webhookSignatureFailures: number;
  blockTimeS: number;
  requiredConfirmations: number;
  payRatePerS: number;
  minedObservation: string;
  blockInterval: Summary;
  /** Chain floor, part 1: send → the block carrying the transfer is produced. */
  sendToMined: Summary;
  /** Chain floor, part 2: that block → the block giving the required confirmations. */
  confirmationWait: Summary;
  /** sendToMined + confirmationWait. */
  chainFloor: Summary;
  /** Ours: the confirming block is produced → purchase.settled observed. */
  overhead: Summary;
  /** Part of the overhead: confirming block → the service wrote the settlement (index poll, settlement worker). */
  confirmedToRecorded: Summary | undefined;
  /** Of that: confirming block → Ponder's index stands at it (Ponder polls the chain). */
  confirmedToIndexed: Summary | undefined;
  /** Of that: index at the confirming block → settlement written (settlement worker). */
  indexedToRecorded: Summary | undefined;
  indexObservation: string;
  /** Part of the overhead: settlement written → delivered to the receiver (dispatcher poll, HTTP). */
  recordedToDelivered: Summary | undefined;
  minedToSettled: Summary;
  sendToSettled: Summary;
  goal: { overheadP50UnderMs: number; met: boolean };
  peakRssBytes: number | undefined;
  /** The purchases, for the hash-submission benchmark (already indexed and settled). */
  settledPurchases: Purchase[];
};

const POLL_MS = 5;
const INDEX_POLL_MS = 10;

/**
 * Settlement latency: N purchases paid at a steady rate on a chain with a block
 * time; each payment's time from send to `purchase.settled` arriving at a real
 * HTTP receiver, beside the chain's own floor observed in the same run.
 */
export async function measureSettlementLatency(params: {
  bench: BenchStack;
  purchases: number;
  payRatePerS: number;
  blockTimeS: number;
  requiredConfirmations: number;
  memory: MemorySampler;
  log: (line: string) => void;
}): Promise<LatencyResult> {
  const { bench, log } = params;
  const runId = randomUUID().slice(0, 8);
  const byOrder = new Map<string, Purchase>();
  let signatureFailures = 0;
  const stopWatchers: (() => Promise<void>)[] = [];

  const receiver = await startBenchReceiver((event) => {
    if (event.type !== "purchase.settled") return;
    if (event.signatureValid === false) signatureFailures++;
    const purchase = byOrder.get(String(event.data.orderId));
    if (purchase === undefined || purchase.settledAt !== undefined) return;
    purchase.settledAt = event.receivedAt;
    const recorded = Date.parse(String(event.data.settledAt));
    if (Number.isFinite(recorded)) purchase.recordedAt = recorded - performance.timeOrigin;
  });

  try {
    const registration = await bench.partnerFetch("/v1/webhook-endpoints", {
      json: { url: receiver.url, events: ["purchase.settled"] },
    });
    let measuredAt: LatencyResult["measuredAt"] = "api";
    let measuredAtNote: string;
    if (registration.status === 201) {
      const endpoint = (await registration.json()) as { secret: string };
      receiver.setSecret(endpoint.secret);
      measuredAt = "webhook";
      measuredAtNote = `purchase.settled delivered by the webhook dispatcher to a node:http receiver on 127.0.0.1 (signature checked)`;
    } else {
      measuredAtNote = `webhook endpoint registration answered ${registration.status}; measured to GET /v1/orders/:id showing status "paid" (polled every 10 ms per purchase)`;
    }
    log(`  settled observed via: ${measuredAt}`);

    // Sessions first, so that creating them is not part of any payment's latency.
    const sessions: CreatedSession[] = [];
    const queue = Array.from({ length: params.purchases }, (_, index) => index);
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (queue.shift() !== undefined) {
          const response = await bench.partnerFetch("/v1/checkout/sessions", { json: sessionBody(runId) });
          if (response.status !== 201 && response.status !== 200) {
            throw new Error(`create session: ${response.status} ${await response.text()}`);
          }
          sessions.push((await response.json()) as CreatedSession);
        }
      }),
    );
    log(`  created ${sessions.length} sessions`);

    // Signed in advance: "sent" is the moment of eth_sendRawTransaction, nothing before it.
    const chain = localChain({ rpcUrl: bench.anvilUrl, chainId: bench.stack.local.chainId });
    const payers = bench.stack.local.accounts.slice(1, 9).map((account) => privateKeyToAccount(account.privateKey as Hex));
    const rpc = jsonRpc(bench.anvilUrl);
    const nonces = await Promise.all(
      payers.map(async (payer) => Number(await rpc("eth_getTransactionCount", [payer.address, "pending"]))),
    );
    const purchases: Purchase[] = [];
    for (const [index, session] of sessions.entries()) {
      const payerIndex = index % payers.length;
      const payer = payers[payerIndex]!;
      const wallet = createWalletClient({ account: payer, chain, transport: http(bench.anvilUrl) });
      const rawTransaction = await wallet.signTransaction({
        account: payer,
        chain,
        to: session.payment.tokenAddress as Address,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: "transfer",
          args: [session.payment.recipient as Address, BigInt(session.payment.amount)],
        }),
        gas: 100_000n,
        maxFeePerGas: parseGwei("50"),
        maxPriorityFeePerGas: parseGwei("1"),
        nonce: nonces[payerIndex]!++,
      });
      const purchase: Purchase = { session, rawTransaction, transactionHash: keccak256(rawTransaction) };
      purchases.push(purchase);
      byOrder.set(session.orderId, purchase);
    }

    const watcher = await startBlockWatcher(bench.anvilUrl, POLL_MS);
    stopWatchers.push(() => watcher.stop());
    const indexWatcher = await startIndexWatcher(bench.baseUrl(), INDEX_POLL_MS);
    stopWatchers.push(() => indexWatcher.stop());
    params.memory.begin("latency");
    const spacingMs = 1000 / params.payRatePerS;
    const start = performance.now() + 200;
    const apiPollers: Promise<void>[] = [];
    const sends: Promise<void>[] = [];
    log(`  paying ${purchases.length} sessions at ${params.payRatePerS}/s (block time ${params.blockTimeS} s)...`);
    for (const [index, purchase] of purchases.entries()) {
      const wait = start + index * spacingMs - performance.now();
      if (wait > 0) await sleep(wait);
      purchase.sentAt = performance.now();
      sends.push(
        rpc("eth_sendRawTransaction", [purchase.rawTransaction]).then(() => {
          purchase.acceptedAt = performance.now();
        }),
      );
      if (measuredAt === "api") apiPollers.push(pollOrderPaid(bench, purchase));
    }
    await Promise.all(sends);

    // Everything sent: wait (bounded) for the last settlements to arrive.
    const graceMs = 30_000 + params.blockTimeS * 1000 * (params.requiredConfirmations + 2);
    const deadline = performance.now() + graceMs;
    while (purchases.some((purchase) => purchase.settledAt === undefined) && performance.now() < deadline) await sleep(50);
    await Promise.all(apiPollers);

    for (const purchase of purchases) {
      let block = watcher.blockOf(purchase.transactionHash);
      if (block === undefined) {
        const receipt = (await rpc("eth_getTransactionReceipt", [purchase.transactionHash])) as { blockNumber: Hex } | null;
        if (receipt !== null) block = Number(receipt.blockNumber);
      }
      if (block === undefined) continue;
      purchase.blockNumber = block;
      purchase.minedAt = watcher.seenAt(block);
      purchase.confirmedAt = await watcher.waitForBlock(
        block + params.requiredConfirmations - 1,
        params.blockTimeS * 1000 * 3 + 5_000,
      );
      purchase.indexedAt = indexWatcher.reachedAt(block + params.requiredConfirmations - 1);
    }
    await watcher.stop();
    await indexWatcher.stop();
    const peakRssBytes = await params.memory.end("latency");

    const complete = purchases.filter(
      (purchase) =>
        purchase.sentAt !== undefined &&
        purchase.minedAt !== undefined &&
        purchase.confirmedAt !== undefined &&
        purchase.settledAt !== undefined,
    ) as Required<Purchase>[];
    const of = (pick: (purchase: Required<Purchase>) => number) => roundSummary(summarize(complete.map(pick)));
    const overhead = of((purchase) => purchase.settledAt - purchase.confirmedAt);
    const goalMs = 100;
    return {
      measuredAt,
      measuredAtNote,
      purchases: purchases.length,
      settled: purchases.filter((purchase) => purchase.settledAt !== undefined).length,
      missing: purchases.filter((purchase) => purchase.settledAt === undefined).length,
      webhookSignatureFailures: signatureFailures,
      blockTimeS: params.blockTimeS,
      requiredConfirmations: params.requiredConfirmations,
      payRatePerS: params.payRatePerS,
      minedObservation: `bench process polls eth_blockNumber on Anvil every ${POLL_MS} ms; "mined" = first poll that saw the block (precision ≈ ${POLL_MS} ms + one loopback RPC round trip; ${watcher.polls()} polls, ${watcher.skipped()} blocks seen two at once)`,
      blockInterval: roundSummary(summarize(watcher.intervals())),
      sendToMined: of((purchase) => purchase.minedAt - purchase.sentAt),
      confirmationWait: of((purchase) => purchase.confirmedAt - purchase.minedAt),
      chainFloor: of((purchase) => purchase.confirmedAt - purchase.sentAt),
      overhead,
      ...splitOverhead(complete),
      indexObservation: `the bench polls the service's /status (Ponder's checkpoint) every ${INDEX_POLL_MS} ms (${indexWatcher.polls()} polls)`,
      minedToSettled: of((purchase) => purchase.settledAt - purchase.minedAt),
      sendToSettled: of((purchase) => purchase.settledAt - purchase.sentAt),
      goal: { overheadP50UnderMs: goalMs, met: overhead.p50 < goalMs },
      peakRssBytes,
      settledPurchases: purchases.filter((purchase) => purchase.settledAt !== undefined),
    };
  } finally {
    for (const stop of stopWatchers) await stop();
    await receiver.close();
  }
}

/** Where the overhead goes, from the settlement time the service writes into the event (webhook mode only). */
function splitOverhead(complete: Required<Purchase>[]) {
  const withRecord = complete.filter((purchase) => Number.isFinite(purchase.recordedAt));
  const withIndex = withRecord.filter((purchase) => purchase.indexedAt !== undefined);
  const of = (list: Required<Purchase>[], pick: (purchase: Required<Purchase>) => number) =>
    list.length === 0 ? undefined : roundSummary(summarize(list.map(pick)));
  return {
    confirmedToRecorded: of(withRecord, (purchase) => purchase.recordedAt - purchase.confirmedAt),
    confirmedToIndexed: of(withIndex, (purchase) => purchase.indexedAt - purchase.confirmedAt),
    indexedToRecorded: of(withIndex, (purchase) => purchase.recordedAt - purchase.indexedAt),
    recordedToDelivered: of(withRecord, (purchase) => purchase.settledAt - purchase.recordedAt),
  };
}

/** Fallback when webhooks are not available: poll the order until it is paid (bounded). */
async function pollOrderPaid(bench: BenchStack, purchase: Purchase): Promise<void> {
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const response = await bench.partnerFetch(`/v1/orders/${purchase.session.orderId}`);
    const observedAt = performance.now();
    if (response.ok) {
      const order = (await response.json()) as { status?: string };
      if (order.status === "paid") {
        purchase.settledAt = observedAt;
        return;
      }
    } else {
      await response.arrayBuffer();
    }
    await sleep(10);
  }
}
