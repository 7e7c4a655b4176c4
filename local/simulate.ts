import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readTokenDomain, type TransferAuthorization, transferAuthorizationTypedData } from "../api/gasless/eip3009.js";
import { testUsdcAbi, testUsdcBytecode } from "../contracts/generated/index.js";
import type { LocalJson } from "./local-stack.js";
import { sendReadyRefund } from "./refund-sender.js";

/**
 * Scenario triggers (`npm run simulate -- <scenario> [--session <id>]`): each drives the
 * local chain, or the Anvil fork of `FORK_URL=… npm start`, so that the partner's own
 * receiver gets the real events of a situation that is hard to cause by hand. Nothing is
 * faked: real transfers, a real reorg (`anvil_reorg`), a real stalled node (SIGSTOP of
 * Anvil), the hosted gasless route, the refund and reward routes. docs/testing.md lists
 * each scenario's events and states. Refused on any node that is not Anvil.
 */
export const SCENARIOS = [
  "underpaid",
  "overpaid",
  "late",
  "duplicate",
  "wrong-token",
  "reorg",
  "outage",
  "relayed",
  "refund",
  "reward",
] as const;
type Scenario = (typeof SCENARIOS)[number];

/** The Anvil account that pays in scenarios (the service's own test payer is account 9). */
const SIMULATE_PAYER_INDEX = 6;
/** The Anvil account that funds rewards when the partner has no funding address yet. */
const SIMULATE_FUNDER_INDEX = 5;

type SimulatedEvent = { id: string; type: string; data: Record<string, unknown> };

export type SimulationResult = {
  scenario: Scenario;
  sessionId: string;
  orderId: string;
  /** What was done, in words, in order. */
  steps: string[];
  /** The event types the partner receives for this scenario, in order. */
  expected: string[];
  /** The events recorded for the order meanwhile (what the partner's endpoints receive). */
  events: SimulatedEvent[];
};

/** A scenario that cannot run here: shown as it is, nothing was sent. */
export class SimulationRefused extends Error {}

type Session = {
  id: string;
  orderId: string;
  status: string;
  expiresAt: string;
  clientToken?: string;
  chainId: number;
  payment: { tokenAddress: Address; recipient: Address; amount: string; totalPriceUsdc: string };
};

type SimulateParams = {
  local: LocalJson;
  /** The local stack's data directory (payment address keys, Anvil's pid). */
  dataDir: string;
  scenario: string;
  /** An existing session of the demo partner; by default one is created. */
  sessionId?: string;
  /** The session's client token: needed with `sessionId` by `relayed` and `reward`. */
  clientToken?: string;
  /** `outage`: how long the node stays stopped (default 10 s). */
  outageMs?: number;
  /** `outage`: Anvil's process id; by default read from `<dataDir>/stack.lock.json`. */
  anvilPid?: number;
  /** How long to wait for the scenario's events (default 120 s: 10 confirmations on a fork take ~20 s). */
  timeoutMs?: number;
  log?: (line: string) => void;
};

export async function simulate(params: SimulateParams): Promise<SimulationResult> {
  if (!(SCENARIOS as readonly string[]).includes(params.scenario)) {
    throw new SimulationRefused(`unknown scenario "${params.scenario}": one of ${SCENARIOS.join(", ")}`);
  }
  const scenario = params.scenario as Scenario;
  const { local } = params;
  const chain = defineChain({
    id: local.chainId,
    name: local.network,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [local.rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport: http(local.rpcUrl, { retryCount: 0 }), pollingInterval: 100 });
  await refuseUnlessAnvil(client, local);

  const steps: string[] = [];
  const step = (line: string) => {
    steps.push(line);
    params.log?.(line);
  };
  const api = partnerApi(local);
  const testClient = createTestClient({ chain, mode: "anvil", transport: http(local.rpcUrl) });
  const payer = privateKeyToAccount(local.accounts[SIMULATE_PAYER_INDEX]?.privateKey as Hex);
  const wallet = createWalletClient({ chain, account: payer, transport: http(local.rpcUrl) });
  const automine = await testClient.getAutomine().catch(() => false);

  const mark = await lastEventId(api);
  const session = await openSession(api, params, scenario, step);
  const needsToken = scenario === "relayed" || scenario === "reward";
  if (needsToken && session.clientToken === undefined) {
    throw new SimulationRefused(
      `the ${scenario} scenario acts as the customer: give the session's client token (--client-token ct_…), or no --session`,
    );
  }

  const pay = async (amount: bigint, what: string, token: Address = session.payment.tokenAddress) => {
    const hash = await wallet.writeContract({
      address: token,
      abi: erc20Abi,
      functionName: "transfer",
      args: [session.payment.recipient, amount],
    });
    const receipt = await client.waitForTransactionReceipt({ hash });
    step(
      `sent ${what}: ${amount} base units from ${payer.address} to ${session.payment.recipient} (${hash}, block ${receipt.blockNumber})`,
    );
    return { hash, blockNumber: receipt.blockNumber };
  };
  const due = BigInt(session.payment.amount);
  const wait = (expected: string[]) =>
    waitForEvents(api, {
      mark,
      session,
      expected,
      timeoutMs: params.timeoutMs ?? 120_000,
      nudge: automine ? testClient : undefined,
    });
  const requireOpen = () => {
    if (session.status !== "awaiting_payment" && session.status !== "open") {
      throw new SimulationRefused(`session ${session.id} is ${session.status}: the ${scenario} scenario pays an open session`);
    }
  };
  const requireSettled = async () => {
    if (session.status === "settled") return;
    requireOpen();
    await pay(due, "the exact amount");
    await wait(["purchase.settled"]);
  };

  let expected: string[];
  switch (scenario) {
    case "underpaid":
    case "overpaid": {
      requireOpen();
      const amount = scenario === "underpaid" ? due - due / 10n : due + due / 10n;
      // A wrong amount names no session by itself: the customer's submitted hash links it
      // to theirs. The service's test payment sends it and submits the hash, as the hosted
      // page's "Pay with a test account" does (the partner's key suffices, no client token).
      const answer = await api.call("POST", `/v1/checkout/sessions/${encodeURIComponent(session.id)}/test-payment`, {
        amount: amount.toString(),
        submit: true,
      });
      if (answer.status !== 200 && answer.status !== 201) {
        throw new SimulationRefused(
          `the test payment was refused (${answer.status}): ${answer.body.code}: ${answer.body.detail}`,
        );
      }
      const submission = answer.body.submission as { status?: string; problem?: { code: string } } | null;
      step(
        `sent a wrong amount (${scenario}; expected ${due}): ${amount} base units from ${String(answer.body.from)} (${String(answer.body.transactionHash)}), hash submitted as the customer would: ${submission?.problem?.code ?? submission?.status ?? "not submitted"}`,
      );
      expected = ["payment.unresolved"];
      break;
    }
    case "late": {
      requireOpen();
      const latest = await client.getBlock();
      const expiresAt = BigInt(Math.floor(Date.parse(session.expiresAt) / 1000));
      const ahead = expiresAt - latest.timestamp + 5n;
      if (ahead > 0n) {
        await testClient.increaseTime({ seconds: Number(ahead) });
        step(
          `moved the chain clock ${ahead} s forward, past the session's expiry (${session.expiresAt}); Anvil's clock never goes back`,
        );
      }
      await pay(due, "the exact amount, after the session expired");
      expected = ["payment.unresolved"];
      break;
    }
    case "duplicate": {
      await requireSettled();
      await pay(due, "the same amount a second time");
      expected = ["purchase.settled", "payment.unresolved"];
      break;
    }
    case "wrong-token": {
      requireOpen();
      const token = await deployOtherToken(wallet, client, payer.address, due);
      step(`deployed another ERC-20 (${token}, not the network's USDC) and minted ${due} base units to ${payer.address}`);
      const sent = await pay(due, "the exact amount in the other token", token);
      if (session.clientToken !== undefined) {
        const answer = await publicPost(local, "/v1/public/checkout/payments", {
          clientToken: session.clientToken,
          transactionHash: sent.hash,
        });
        step(`submitted the hash as the customer would: ${answer.status} ${String(answer.body.code ?? answer.body.status)}`);
      }
      expected = [];
      break;
    }
    case "reorg": {
      await requireSettled();
      const settled = await paymentOf(api, session);
      if (settled === undefined) throw new SimulationRefused(`session ${session.id} has no settled payment to reorg`);
      const raw = (await client.request({
        method: "eth_getRawTransactionByHash" as never,
        params: [settled.transactionHash] as never,
      })) as Hex;
      const receipt = await client.getTransactionReceipt({ hash: settled.transactionHash });
      const head = await client.getBlockNumber({ cacheTime: 0 });
      const depth = Number(head - receipt.blockNumber + 1n);
      if (depth > 60) throw new SimulationRefused(`the payment is ${depth} blocks deep: only the last 64 blocks are re-checked`);
      await testClient.request({ method: "anvil_reorg" as never, params: [depth, []] as never });
      await nextBlockAfterReorg(client, testClient);
      step(
        `reorged the last ${depth} blocks (from block ${receipt.blockNumber}) away with anvil_reorg: the payment is off the chain`,
      );
      await wait(["payment.reorged"]);
      const hash = await client.sendRawTransaction({ serializedTransaction: raw });
      const again = await client.waitForTransactionReceipt({ hash });
      if (automine) await testClient.mine({ blocks: 1 });
      step(`mined the same signed transaction again (block ${again.blockNumber}): the payment is back`);
      expected = ["purchase.settled", "payment.reorged", "payment.restored"];
      break;
    }
    case "outage": {
      requireOpen();
      const pid = params.anvilPid ?? anvilPidOf(params.dataDir, local);
      const nonce = await client.getTransactionCount({ address: payer.address, blockTag: "pending" });
      const fees = await client.estimateFeesPerGas();
      const signed = await payer.signTransaction({
        chainId: chain.id,
        type: "eip1559",
        to: session.payment.tokenAddress,
        nonce,
        gas: 100_000n,
        maxFeePerGas: fees.maxFeePerGas * 2n,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [session.payment.recipient, due] }),
      });
      const outageMs = params.outageMs ?? 10_000;
      // A client that waits for the stopped node instead of timing out and resending.
      const patient = createPublicClient({
        chain,
        transport: http(local.rpcUrl, { timeout: outageMs + 120_000, retryCount: 0 }),
      });
      process.kill(pid, "SIGSTOP");
      let sending: Promise<Hex>;
      try {
        step(`stopped the node (SIGSTOP of Anvil, pid ${pid}) for ${outageMs / 1000} s and sent the exact amount into it`);
        sending = patient.sendRawTransaction({ serializedTransaction: signed });
        sending.catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, outageMs));
      } finally {
        process.kill(pid, "SIGCONT");
      }
      const hash = await sending;
      step(`resumed the node (SIGCONT): the payment ${hash} is mined and indexed after the gap`);
      expected = ["purchase.settled"];
      break;
    }
    case "relayed": {
      requireOpen();
      const auth: TransferAuthorization = {
        from: payer.address,
        to: session.payment.recipient,
        value: due,
        validAfter: 0n,
        validBefore: BigInt(Math.floor(Date.parse(session.expiresAt) / 1000)),
        nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
      };
      const domain = await readTokenDomain(client as PublicClient, { token: session.payment.tokenAddress, chainId: chain.id });
      const signature = await payer.signTypedData(transferAuthorizationTypedData(domain, auth));
      const answer = await publicPost(local, `/v1/public/checkout/sessions/${session.id}/authorizations`, {
        clientToken: session.clientToken,
        authorization: {
          from: auth.from,
          to: auth.to,
          value: auth.value.toString(),
          validAfter: auth.validAfter.toString(),
          validBefore: auth.validBefore.toString(),
          nonce: auth.nonce,
        },
        signature,
      });
      if (answer.status !== 200) {
        throw new SimulationRefused(
          `the service refused the authorization (${answer.status}): ${answer.body.code}: ${answer.body.detail}`,
        );
      }
      step(
        `signed an EIP-3009 authorization of ${due} base units from ${payer.address}; the service's relayer ${String(answer.body.relayer)} submitted it (${String(answer.body.transactionHash)})`,
      );
      expected = ["purchase.settled"];
      break;
    }
    case "refund": {
      await requireSettled();
      const amount = due / 2n;
      const created = await api.call("POST", "/v1/refunds", {
        orderId: session.orderId,
        amount: amount.toString(),
        reason: "requested_by_customer",
        destination: "payer",
        idempotencyKey: `simulate-refund-${randomUUID()}`,
      });
      if (created.status !== 201 && created.status !== 200) {
        throw new SimulationRefused(`the refund was refused (${created.status}): ${created.body.code}: ${created.body.detail}`);
      }
      step(`created refund ${created.body.id} of ${amount} base units to the payer (${created.body.destination})`);
      const sent = await sendReadyRefund({ local, refundId: String(created.body.id) });
      step(`sent it from the payment address ${sent.from}, as the shop would (${sent.hash})`);
      expected = ["purchase.settled", "refund.created", "refund.ready", "refund.succeeded"];
      break;
    }
    case "reward": {
      await requireSettled();
      const amount = due / 20n;
      await ensureRewardFunding(api, { local, chain, client, amount, step });
      const granted = await api.call("POST", `/v1/orders/${session.orderId}/rewards`, {
        amount: amount.toString(),
        idempotencyKey: `simulate-reward-${randomUUID()}`,
      });
      if (granted.status !== 201) {
        throw new SimulationRefused(`the reward was refused (${granted.status}): ${granted.body.code}: ${granted.body.detail}`);
      }
      const rewardId = String(granted.body.id);
      step(`granted reward ${rewardId} of ${amount} base units on order ${session.orderId}`);
      const claim = await publicPost(local, `/v1/public/rewards/${rewardId}/claim`, {
        clientToken: session.clientToken,
        walletAddress: payer.address,
      });
      if (claim.status !== 200) {
        throw new SimulationRefused(`the claim was refused (${claim.status}): ${claim.body.code}: ${claim.body.detail}`);
      }
      const transaction = claim.body.transaction as { to: Address; data: Hex };
      const hash = await wallet.sendTransaction({ to: transaction.to, data: transaction.data });
      await client.waitForTransactionReceipt({ hash });
      step(`claimed it to ${payer.address} with the service's voucher (${hash})`);
      expected = ["purchase.settled", "reward.claimed"];
      break;
    }
  }
  const waitingFor = session.status === "settled" ? expected.filter((type) => type !== "purchase.settled") : expected;
  const events = await wait(waitingFor);
  return { scenario, sessionId: session.id, orderId: session.orderId, steps, expected: waitingFor, events };
}

/** Only Anvil, answering the chain id local.json names: never a real network's node. */
export async function refuseUnlessAnvil(client: PublicClient, local: LocalJson) {
  const version = await client.request({ method: "web3_clientVersion" }).then(String, (error: Error) => {
    throw new SimulationRefused(
      `the chain at ${local.rpcUrl} does not answer (${error.message.split("\n")[0]}): is npm start running?`,
    );
  });
  if (!version.toLowerCase().startsWith("anvil")) {
    throw new SimulationRefused(
      `simulate drives only the local chain or its fork (npm start, FORK_URL=… npm start): the node at ${local.rpcUrl} is ${version}, not Anvil`,
    );
  }
  const chainId = await client.getChainId();
  if (chainId !== local.chainId) {
    throw new SimulationRefused(`the node at ${local.rpcUrl} answers chain ${chainId}, not ${local.chainId} of local.json`);
  }
}

type Answer = { status: number; body: Record<string, unknown> };

export function partnerApi(local: LocalJson) {
  return {
    async call(method: string, path: string, json?: unknown): Promise<Answer> {
      const response = await fetch(`${local.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${local.partner.apiKey}`,
          ...(json === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
  };
}
export type PartnerApi = ReturnType<typeof partnerApi>;

export async function publicPost(local: LocalJson, path: string, json: unknown): Promise<Answer> {
  const response = await fetch(`${local.baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(json),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function openSession(
  api: PartnerApi,
  params: SimulateParams,
  scenario: Scenario,
  step: (line: string) => void,
): Promise<Session> {
  if (params.sessionId !== undefined) {
    const read = await api.call("GET", `/v1/checkout/sessions/${encodeURIComponent(params.sessionId)}`);
    if (read.status !== 200) throw new SimulationRefused(`session ${params.sessionId}: ${read.status} ${read.body.code ?? ""}`);
    const session = read.body as unknown as Session;
    step(`using session ${session.id} (${session.status}), order ${session.orderId}`);
    return { ...session, clientToken: params.clientToken };
  }
  const externalOrderId = `simulate-${scenario}-${randomUUID().slice(0, 8)}`;
  const created = await api.call("POST", "/v1/checkout/sessions", {
    externalOrderId,
    externalProductId: "sku-simulated",
    productName: `Simulated ${scenario}`,
    quantity: 1,
    totalPriceUsdc: "25000000",
    paymentMethod: "usdc",
    checkoutMode: "hosted_transfer",
    idempotencyKey: `create-${externalOrderId}`,
    metadata: { simulated: scenario },
    // A late payment needs an expired session: the shortest expiry, so the chain clock moves least.
    ...(scenario === "late" ? { expiresInSeconds: 300 } : {}),
  });
  if (created.status !== 201) {
    throw new SimulationRefused(`the session was refused (${created.status}): ${created.body.code}: ${created.body.detail}`);
  }
  const session = created.body as unknown as Session;
  step(
    `created session ${session.id} for order ${externalOrderId} (${session.orderId}): 25000000 base units, due ${session.payment.amount}`,
  );
  return session;
}

/** The id of the partner's last event so far: the scenario's events are the ones after it. */
export async function lastEventId(api: PartnerApi): Promise<string | undefined> {
  let last: string | undefined;
  let cursor: string | undefined;
  for (;;) {
    const page = await api.call(
      "GET",
      `/v1/events?limit=500${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    const data = page.body.data as SimulatedEvent[];
    if (data.length > 0) last = data[data.length - 1]?.id;
    cursor = (page.body.nextCursor as string | null) ?? undefined;
    if (cursor === undefined) return last;
  }
}

/**
 * Waits until every expected event type was recorded for the session's order after
 * `mark` (in any order), and returns those events. On an automining chain a block is
 * mined each second while waiting, so confirmations above 1 still come.
 */
async function waitForEvents(
  api: PartnerApi,
  params: {
    mark: string | undefined;
    session: Session;
    expected: string[];
    timeoutMs: number;
    nudge?: ReturnType<typeof createTestClient>;
  },
): Promise<SimulatedEvent[]> {
  const deadline = Date.now() + params.timeoutMs;
  let lastNudge = Date.now();
  for (;;) {
    const events: SimulatedEvent[] = [];
    let after = params.mark;
    for (;;) {
      const query = `/v1/events?limit=500${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`;
      const page = await api.call("GET", query);
      const data = page.body.data as SimulatedEvent[];
      events.push(...data);
      if (page.body.nextCursor === null || data.length === 0) break;
      after = data[data.length - 1]?.id;
    }
    const mine = events.filter(
      (event) => event.data.orderId === params.session.orderId || event.data.sessionId === params.session.id,
    );
    const missing = params.expected.filter((type) => !mine.some((event) => event.type === type));
    if (missing.length === 0) return mine;
    if (Date.now() > deadline) {
      throw new Error(
        `waited ${params.timeoutMs / 1000} s for ${missing.join(", ")} on order ${params.session.orderId}; recorded: ${mine.map((event) => event.type).join(", ") || "nothing"}`,
      );
    }
    if (params.nudge !== undefined && Date.now() - lastNudge > 1_000) {
      await params.nudge.mine({ blocks: 1 });
      lastNudge = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function paymentOf(api: PartnerApi, session: Session): Promise<{ transactionHash: Hex } | undefined> {
  const order = await api.call("GET", `/v1/orders/${session.orderId}`);
  const payment = order.body.payment as { transactionHash?: Hex } | null | undefined;
  return payment?.transactionHash === undefined ? undefined : { transactionHash: payment.transactionHash };
}

/** After `anvil_reorg` Anvil's clock falls back to the replaced blocks' time: the next block comes after both. */
async function nextBlockAfterReorg(client: PublicClient, testClient: ReturnType<typeof createTestClient>) {
  const latest = await client.getBlock({ blockTag: "latest" });
  const now = BigInt(Math.floor(Date.now() / 1000));
  const next = (latest.timestamp > now ? latest.timestamp : now) + 1n;
  await testClient.setNextBlockTimestamp({ timestamp: next });
  await testClient.mine({ blocks: 1 });
}

async function deployOtherToken(
  wallet: ReturnType<typeof createWalletClient>,
  client: PublicClient,
  holder: Address,
  amount: bigint,
): Promise<Address> {
  const account = wallet.account;
  if (account === undefined) throw new Error("no account");
  const hash = await wallet.deployContract({
    abi: testUsdcAbi,
    bytecode: testUsdcBytecode,
    args: [holder],
    account,
    chain: wallet.chain,
  });
  const receipt = await client.waitForTransactionReceipt({ hash });
  const token = receipt.contractAddress as Address;
  const minted = await wallet.writeContract({
    address: token,
    abi: testUsdcAbi,
    functionName: "mint",
    args: [holder, amount],
    account,
    chain: wallet.chain,
  });
  await client.waitForTransactionReceipt({ hash: minted });
  return token;
}

/**
 * The partner's reward funding: the funding address set (an Anvil account when there is
 * none yet) and its allowance to the distributor at least `amount` (approved from that
 * account, whose key local.json holds; another funding address is the partner's to approve).
 */
async function ensureRewardFunding(
  api: PartnerApi,
  params: {
    local: LocalJson;
    chain: ReturnType<typeof defineChain>;
    client: PublicClient;
    amount: bigint;
    step: (line: string) => void;
  },
) {
  const settings = (await api.call("GET", "/v1/rewards/settings")).body as {
    fundingAddress: string | null;
    fundingProven: boolean;
    allowance: string | null;
  };
  let funding = settings.fundingAddress;
  if (funding === null || !settings.fundingProven) {
    // Unset, or set before funding addresses were proven: a test account's key signs the proof (docs/rewards.md).
    const known =
      funding === null
        ? undefined
        : params.local.accounts.find((account) => account.address.toLowerCase() === funding?.toLowerCase());
    const account = known ?? params.local.accounts[SIMULATE_FUNDER_INDEX];
    if (account === undefined) throw new SimulationRefused("local.json lists no test account to fund rewards from");
    funding = account.address;
    const challenge = await api.call("POST", "/v1/rewards/settings/funding-challenge", { fundingAddress: funding });
    if (challenge.status !== 200) {
      throw new SimulationRefused(`no funding challenge (${challenge.status}): ${challenge.body.code}`);
    }
    const message = String(challenge.body.message);
    const signature = await privateKeyToAccount(account.privateKey as Hex).signMessage({ message });
    const set = await api.call("PUT", "/v1/rewards/settings", { fundingAddress: funding, fundingProof: { message, signature } });
    if (set.status !== 200) throw new SimulationRefused(`the funding address was refused (${set.status}): ${set.body.code}`);
    params.step(`set and proved the reward funding address ${funding} (a test account)`);
  }
  if (BigInt(settings.allowance ?? "0") >= params.amount && settings.fundingProven) return;
  const fundingAddress = funding;
  const funder = params.local.accounts.find((account) => account.address.toLowerCase() === fundingAddress.toLowerCase());
  if (funder === undefined) {
    throw new SimulationRefused(
      `the reward funding address ${funding} has too small an allowance and is not a test account: approve the distributor from it`,
    );
  }
  const wallet = createWalletClient({
    chain: params.chain,
    account: privateKeyToAccount(funder.privateKey as Hex),
    transport: http(params.local.rpcUrl),
  });
  const allowance = params.amount * 100n;
  const hash = await wallet.writeContract({
    address: params.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "approve",
    args: [params.local.contracts.rewardDistributor as Address, allowance],
    chain: params.chain,
  });
  await params.client.waitForTransactionReceipt({ hash });
  await api.call("PUT", "/v1/rewards/settings", {});
  params.step(`approved the reward distributor for ${allowance} base units from ${funder.address}`);
}

/** Anvil's pid from the lock `npm start` keeps (its first child), checked to be an Anvil on local.json's port. */
function anvilPidOf(dataDir: string, local: LocalJson): number {
  let children: number[] = [];
  try {
    children = (JSON.parse(readFileSync(join(dataDir, "stack.lock.json"), "utf8")) as { children: number[] }).children;
  } catch {
    throw new SimulationRefused(
      `no running npm start found in ${dataDir} (stack.lock.json): the outage scenario stops its Anvil`,
    );
  }
  const port = new URL(local.rpcUrl).port;
  for (const pid of children) {
    const command = (() => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      } catch {
        return [];
      }
    })();
    if (command.some((part) => part.endsWith("anvil")) && command.includes(port)) return pid;
  }
  throw new SimulationRefused(`the Anvil of ${local.rpcUrl} is not among the processes of npm start in ${dataDir}`);
}
