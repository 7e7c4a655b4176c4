import { randomUUID } from "node:crypto";
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
  parseSignature,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { LocalJson } from "./local-stack.js";
import { lastEventId, type PartnerApi, partnerApi, publicPost, refuseUnlessAnvil, SimulationRefused } from "./simulate.js";

/**
 * The subscription scenarios of `npm run simulate` (docs/subscriptions.md, docs/testing.md):
 * `subscription` creates a subscription of the demo partner and subscribes to it as a new test
 * customer through the public routes the hosted page calls, with two signatures and no ETH;
 * `renewal` moves Anvil's clock to the next period so the service's worker charges it;
 * `renewal-failure` empties the customer's wallet first, so that charge fails. Nothing is faked:
 * the worker, the relayer and the index do what they do on Base.
 */
export const SUBSCRIPTION_SCENARIOS = ["subscription", "renewal", "renewal-failure"] as const;
type SubscriptionScenario = (typeof SUBSCRIPTION_SCENARIOS)[number];

export function isSubscriptionScenario(scenario: string): scenario is SubscriptionScenario {
  return (SUBSCRIPTION_SCENARIOS as readonly string[]).includes(scenario);
}

/** The Anvil account that funds the new customer (the same payer as the checkout scenarios). */
const FUNDER_INDEX = 6;
/** 2 USDC an hour: the shortest period a partner may sell, so a renewal moves the chain's clock least. */
const AMOUNT = 2_000_000n;
const PERIOD_SECONDS = 3_600;

type SimulatedEvent = { id: string; type: string; data: Record<string, unknown> };

export type SubscriptionSimulation = {
  scenario: SubscriptionScenario;
  subscriptionId: string;
  /** The customer's page with its token; only known when the scenario created the subscription. */
  customerUrl: string | null;
  subscriber: Address;
  /** What was done, in words, in order. */
  steps: string[];
  /** The event types the partner receives for this scenario, in order. */
  expected: string[];
  /** The subscription's events recorded meanwhile (what the partner's endpoints receive). */
  events: SimulatedEvent[];
};

type SubscriptionBody = {
  id: string;
  status: string;
  amount: string;
  periodSeconds: number;
  subscriber: Address | null;
  token: Address;
  onchainId: Hex | null;
  clientToken: string | null;
  url: string | null;
  customerUrl: string | null;
  nextChargeAt: string | null;
  charges: { periodIndex: number; status: string }[];
};

type TypedDataAnswer = {
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
};

export async function simulateSubscription(params: {
  local: LocalJson;
  scenario: string;
  /** An existing subscription of the demo partner (`subscription` needs its client token with it). */
  subscriptionId?: string;
  /** `subscription` with `subscriptionId`: the token of its link (`#st=`), to subscribe as its customer. */
  clientToken?: string;
  /** How long to wait for each step's events (default 120 s: 10 confirmations on a fork take ~20 s). */
  timeoutMs?: number;
  log?: (line: string) => void;
}): Promise<SubscriptionSimulation> {
  if (!isSubscriptionScenario(params.scenario)) {
    throw new SimulationRefused(`unknown scenario "${params.scenario}": one of ${SUBSCRIPTION_SCENARIOS.join(", ")}`);
  }
  const scenario = params.scenario;
  if (scenario === "renewal" && params.subscriptionId === undefined) {
    throw new SimulationRefused(
      "renewal charges an existing subscription: give --subscription sub_… (from the subscription scenario)",
    );
  }
  if (scenario === "subscription" && params.subscriptionId !== undefined && params.clientToken === undefined) {
    throw new SimulationRefused(
      "the subscription scenario subscribes as the customer: with --subscription give its client token too (--client-token st_…, from the link after #st=)",
    );
  }
  const { local } = params;
  const chain = defineChain({
    id: local.chainId,
    name: local.network,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [local.rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport: http(local.rpcUrl, { retryCount: 0 }), pollingInterval: 100 });
  await refuseUnlessAnvil(client, local);
  const testClient = createTestClient({ chain, mode: "anvil", transport: http(local.rpcUrl) });
  const automine = await testClient.getAutomine().catch(() => false);
  const api = partnerApi(local);
  const steps: string[] = [];
  const step = (line: string) => {
    steps.push(line);
    params.log?.(line);
  };
  const timeoutMs = params.timeoutMs ?? 120_000;
  const waitFor = (subscriptionId: string, mark: string | undefined, expected: string[], stopOn: string[] = []) =>
    waitForSubscriptionEvents(api, {
      subscriptionId,
      mark,
      expected,
      stopOn,
      timeoutMs,
      nudge: automine ? testClient : undefined,
    });

  let subscription: SubscriptionBody;
  let customerUrl: string | null = null;
  const events: SimulatedEvent[] = [];
  const expected: string[] = [];
  if (params.subscriptionId === undefined || scenario === "subscription") {
    const mark = await lastEventId(api);
    const existing =
      params.subscriptionId === undefined
        ? undefined
        : { ...(await readSubscription(api, params.subscriptionId)), clientToken: params.clientToken ?? null };
    subscription = await subscribeNewCustomer({ local, chain, client, api, existing, step });
    customerUrl = subscription.customerUrl;
    const first = ["subscription.activated", "subscription.charged"];
    events.push(...(await waitFor(subscription.id, mark, first)));
    expected.push(...first);
    const charged = events.find((event) => event.type === "subscription.charged");
    step(
      `the service saw the registration, turned the subscription active and charged period 0: charge ${String(charged?.data.chargeId)}, order ${String(charged?.data.orderId)} (${String(charged?.data.transactionHash)})`,
    );
  } else {
    subscription = await readSubscription(api, params.subscriptionId);
    step(`using subscription ${subscription.id} (${subscription.status}) of ${subscription.subscriber ?? "no subscriber yet"}`);
  }
  const subscriber = subscription.subscriber;
  if (subscriber === null) throw new SimulationRefused(`subscription ${subscription.id} has no subscriber yet`);

  if (scenario !== "subscription") {
    const current = await readSubscription(api, subscription.id);
    if (current.status !== "active" && current.status !== "past_due") {
      throw new SimulationRefused(
        `subscription ${current.id} is ${current.status}: ${scenario} needs an active (or past_due) subscription`,
      );
    }
    if (scenario === "renewal-failure") await emptyWallet({ local, chain, client, testClient, subscription: current, step });
    const mark = await lastEventId(api);
    await moveClockToNextCharge({ client, testClient, subscription: current, step });
    const wanted =
      scenario === "renewal"
        ? ["subscription.charged"]
        : current.status === "past_due"
          ? ["subscription.charge_failed"]
          : ["subscription.charge_failed", "subscription.past_due"];
    // A renewal whose charge fails is shown as it is, not waited on for the whole timeout.
    const stopOn = scenario === "renewal" ? ["subscription.charge_failed"] : [];
    const renewed = await waitFor(subscription.id, mark, wanted, stopOn);
    events.push(...renewed);
    expected.push(...wanted);
    const charged = renewed.find((event) => event.type === "subscription.charged");
    const failed = renewed.find((event) => event.type === "subscription.charge_failed");
    if (charged !== undefined) {
      step(
        `the worker charged period ${String(charged.data.periodIndex)}: charge ${String(charged.data.chargeId)}, order ${String(charged.data.orderId)} (${String(charged.data.transactionHash)})`,
      );
    }
    if (failed !== undefined) {
      step(
        `the worker read the balance first and sent nothing: charge ${String(failed.data.chargeId)} of period ${String(failed.data.periodIndex)} failed (${String(failed.data.failureReason)}), next try at ${String(failed.data.nextRetryAt)} chain time`,
      );
    }
  }
  return { scenario, subscriptionId: subscription.id, customerUrl, subscriber, steps, expected, events };
}

async function readSubscription(api: PartnerApi, id: string): Promise<SubscriptionBody> {
  const read = await api.call("GET", `/v1/subscriptions/${encodeURIComponent(id)}`);
  if (read.status !== 200) throw new SimulationRefused(`subscription ${id}: ${read.status} ${String(read.body.code ?? "")}`);
  return read.body as unknown as SubscriptionBody;
}

/**
 * Creates an hourly subscription of the demo partner and subscribes a new wallet to it the way
 * the hosted page does: the terms and the permit from the public terms route, both signed by the
 * customer's key, relayed by the service. The wallet holds USDC and no ETH.
 */
async function subscribeNewCustomer(params: {
  local: LocalJson;
  chain: ReturnType<typeof defineChain>;
  client: PublicClient;
  api: PartnerApi;
  /** A subscription the partner created, with the token of its link; by default one is created. */
  existing: SubscriptionBody | undefined;
  step: (line: string) => void;
}): Promise<SubscriptionBody> {
  const { local, api, step } = params;
  let subscription: SubscriptionBody;
  if (params.existing === undefined) {
    const externalCustomerId = `simulate-${randomUUID().slice(0, 8)}`;
    const created = await api.call("POST", "/v1/subscriptions", {
      externalCustomerId,
      productName: "Simulated hourly plan",
      amount: AMOUNT.toString(),
      interval: { seconds: PERIOD_SECONDS },
      metadata: { simulated: "subscription" },
      idempotencyKey: `simulate-${externalCustomerId}`,
    });
    if (created.status !== 201) {
      throw new SimulationRefused(
        `the subscription was refused (${created.status}): ${created.body.code}: ${created.body.detail}`,
      );
    }
    subscription = created.body as unknown as SubscriptionBody;
    step(
      `created subscription ${subscription.id} for customer ${externalCustomerId}: ${AMOUNT} base units every ${PERIOD_SECONDS} s (${subscription.status})`,
    );
  } else {
    subscription = params.existing;
    if (subscription.status !== "awaiting_authorization") {
      throw new SimulationRefused(
        `subscription ${subscription.id} is ${subscription.status}: only one awaiting its customer is subscribed to`,
      );
    }
    step(`using subscription ${subscription.id}: ${subscription.amount} base units every ${subscription.periodSeconds} s`);
  }
  // The permit covers at most twelve periods: the customer holds that much.
  const funded = 12n * BigInt(subscription.amount);

  // A new wallet each run: its allowance and balance are this subscription's alone.
  const customer = privateKeyToAccount(generatePrivateKey());
  const funder = privateKeyToAccount(local.accounts[FUNDER_INDEX]?.privateKey as Hex);
  const funding = await createWalletClient({ chain: params.chain, account: funder, transport: http(local.rpcUrl) }).writeContract(
    {
      address: subscription.token,
      abi: erc20Abi,
      functionName: "transfer",
      args: [customer.address, funded],
      chain: params.chain,
    },
  );
  await params.client.waitForTransactionReceipt({ hash: funding });
  step(
    `gave a new test customer ${customer.address} ${funded} base units of USDC from ${funder.address} (${funding}), and no ETH`,
  );

  const terms = await publicPost(local, `/v1/public/subscriptions/${subscription.id}/terms`, {
    clientToken: subscription.clientToken,
    subscriber: customer.address,
  });
  if (terms.status !== 200) {
    throw new SimulationRefused(`the terms were refused (${terms.status}): ${terms.body.code}: ${terms.body.detail}`);
  }
  const permit = terms.body.permit as { value: string; deadline: string; typedData: TypedDataAnswer };
  const signature = await customer.signTypedData(signable(terms.body.typedData as TypedDataAnswer));
  const permitSignature = parseSignature(await customer.signTypedData(signable(permit.typedData)));
  step(
    `the customer signed the terms (on-chain id ${String(terms.body.onchainId)}) and a permit of ${permit.value} base units to the manager, as the subscribe page asks`,
  );
  const authorized = await publicPost(local, `/v1/public/subscriptions/${subscription.id}/authorize`, {
    clientToken: subscription.clientToken,
    signature,
    permit: { deadline: permit.deadline, v: Number(permitSignature.v), r: permitSignature.r, s: permitSignature.s },
  });
  if (authorized.status !== 200) {
    throw new SimulationRefused(
      `the authorization was refused (${authorized.status}): ${authorized.body.code}: ${authorized.body.detail}`,
    );
  }
  step(`the service's relayer sent subscribeWithPermit and paid its gas (${String(authorized.body.transactionHash)})`);
  return { ...subscription, subscriber: customer.address };
}

/** viem wants the typed data's numbers as bigints; the service sends them as JSON strings. */
function signable(typedData: TypedDataAnswer) {
  const message = Object.fromEntries(
    Object.entries(typedData.message).map(([key, value]) => [
      key,
      typeof value === "string" && /^\d+$/.test(value) ? BigInt(value) : value,
    ]),
  );
  const domain = { ...typedData.domain, chainId: Number(typedData.domain.chainId) };
  return { ...typedData, domain, message } as unknown as Parameters<ReturnType<typeof privateKeyToAccount>["signTypedData"]>[0];
}

/**
 * Sends all the subscriber's USDC to the funder account, as Anvil lets anyone act for any
 * address (`anvil_impersonateAccount`): whoever created the wallet, its key is not needed.
 */
async function emptyWallet(params: {
  local: LocalJson;
  chain: ReturnType<typeof defineChain>;
  client: PublicClient;
  testClient: ReturnType<typeof createTestClient>;
  subscription: SubscriptionBody;
  step: (line: string) => void;
}) {
  const subscriber = params.subscription.subscriber as Address;
  const token = params.subscription.token;
  const balance = await params.client.readContract({
    address: token,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [subscriber],
  });
  if (balance === 0n) {
    params.step(`the subscriber ${subscriber} holds no USDC already`);
    return;
  }
  const to = params.local.accounts[FUNDER_INDEX]?.address as Address;
  const gas = 10n ** 16n;
  if ((await params.client.getBalance({ address: subscriber })) < gas) {
    await params.testClient.setBalance({ address: subscriber, value: gas });
  }
  await params.testClient.impersonateAccount({ address: subscriber });
  try {
    const wallet = createWalletClient({ chain: params.chain, account: subscriber, transport: http(params.local.rpcUrl) });
    const hash = await wallet.writeContract({
      address: token,
      abi: erc20Abi,
      functionName: "transfer",
      args: [to, balance],
      chain: params.chain,
    });
    await params.client.waitForTransactionReceipt({ hash });
    params.step(
      `emptied the subscriber's wallet: sent its ${balance} base units to ${to} as ${subscriber} (anvil_impersonateAccount, gas from anvil_setBalance; ${hash})`,
    );
  } finally {
    await params.testClient.stopImpersonatingAccount({ address: subscriber });
  }
}

/** Moves Anvil's clock to the subscription's next period (`evm_increaseTime`, then a block). */
async function moveClockToNextCharge(params: {
  client: PublicClient;
  testClient: ReturnType<typeof createTestClient>;
  subscription: SubscriptionBody;
  step: (line: string) => void;
}) {
  const { subscription } = params;
  if (subscription.nextChargeAt === null) {
    throw new SimulationRefused(`subscription ${subscription.id} has no next charge: its terms end before another period`);
  }
  const due = BigInt(Math.ceil(Date.parse(subscription.nextChargeAt) / 1000));
  const latest = await params.client.getBlock({ blockTag: "latest" });
  const ahead = due - latest.timestamp + 1n;
  if (ahead > 0n) await params.testClient.increaseTime({ seconds: Number(ahead) });
  await params.testClient.mine({ blocks: 1 });
  params.step(
    `moved the chain's clock ${ahead > 0n ? ahead : 0n} s forward to the next period (${subscription.nextChargeAt}) with evm_increaseTime and mined a block; Anvil's clock never goes back`,
  );
}

/**
 * Waits until every expected event type was recorded for the subscription after `mark`, or one
 * of `stopOn` was, and returns the subscription's events. On an automining chain a block is
 * mined each second while waiting, so confirmations above 1 still come.
 */
async function waitForSubscriptionEvents(
  api: PartnerApi,
  params: {
    subscriptionId: string;
    mark: string | undefined;
    expected: string[];
    stopOn: string[];
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
    const mine = events.filter((event) => event.data.subscriptionId === params.subscriptionId);
    const missing = params.expected.filter((type) => !mine.some((event) => event.type === type));
    if (missing.length === 0 || mine.some((event) => params.stopOn.includes(event.type))) return mine;
    if (Date.now() > deadline) {
      throw new Error(
        `waited ${params.timeoutMs / 1000} s for ${missing.join(", ")} on subscription ${params.subscriptionId}; recorded: ${mine.map((event) => event.type).join(", ") || "nothing"}`,
      );
    }
    if (params.nudge !== undefined && Date.now() - lastNudge > 1_000) {
      await params.nudge.mine({ blocks: 1 });
      lastNudge = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
