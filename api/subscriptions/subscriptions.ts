import { createHash, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { type Address, getAddress } from "viem";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { findIdempotentResource, recordIdempotentResource } from "../checkout/idempotency.js";
import { enabledNetwork } from "../config/enabled-networks.js";
import type { NetworkConfig, NetworkName } from "../config/networks.js";
import { keysetPage } from "../http/cursor.js";
import { ProblemError, problem, problems } from "../http/problem.js";
import type { EventData } from "../outbox/event-types.js";
import { recordEvent } from "../outbox/record-event.js";
import { paymentAddressesOnChain } from "../partners/payment-addresses.js";
import type { Database } from "../store/database.js";
import type { SubscriptionStatus } from "../store/subscription-tables.js";
import { allows } from "../store/transition-table.js";
import { chargesOfSubscription, type SubscriptionCharge } from "./charge-record.js";
import {
  findPartnerSubscription,
  findSubscription,
  insertSubscription,
  markCancelAtPeriodEnd,
  moveSubscription,
  replaceClientToken,
  type Subscription,
  subscriptionsPage,
  subscriptionTransitions,
} from "./subscription-record.js";
import { type NamedInterval, periodOf, periodStart } from "./subscription-rules.js";

/** Client tokens are the customer's credential for one subscription's pages: random, stored as SHA-256 only. */
export const hashSubscriptionToken = (token: string) => createHash("sha256").update(token).digest("hex");
const newClientToken = () => `st_${randomBytes(24).toString("base64url")}`;

/** `<base>/subscribe/<id>#st=<token>`: the token rides in the fragment, which browsers never send. */
export const subscribePageUrl = (baseUrl: string, id: string, token: string) =>
  `${baseUrl}/subscribe/${encodeURIComponent(id)}#st=${encodeURIComponent(token)}`;
export const customerPageUrl = (baseUrl: string, id: string, token: string) =>
  `${baseUrl}/subscription/${encodeURIComponent(id)}#st=${encodeURIComponent(token)}`;

const IDEMPOTENCY_SCOPE = "subscription";

export type CreateSubscriptionInput = {
  partnerId: string;
  externalCustomerId: string;
  productName: string;
  amount: bigint;
  interval: NamedInterval | { seconds: number };
  network?: NetworkName;
  /** Epoch milliseconds. */
  startAt?: number;
  endAt?: number;
  metadata?: Record<string, unknown>;
  successUrl?: string;
  cancelUrl?: string;
  idempotencyKey: string;
  requestHash: string;
};

class IdempotencyRace extends Error {}

/** The network a subscription runs on, with its manager; refused when subscriptions are off there. */
function subscriptionNetwork(context: Pick<AppContext, "networks">, name: NetworkName | undefined) {
  // The first enabled network is the default, as for checkout sessions.
  const network: NetworkConfig = name === undefined ? context.networks[0]! : enabledNetwork(context, name);
  if (network.subscriptionManager === undefined) {
    throw problem("subscriptions_unavailable", `No subscription manager is configured on ${network.name}.`);
  }
  return { network, manager: network.subscriptionManager };
}

/** The partner's payment address charges go to: the first one of the network the indexer watches. */
async function payeeOf(db: Kysely<Database>, partnerId: string, network: NetworkConfig): Promise<Address> {
  const rows = await paymentAddressesOnChain(db, { chainId: network.chainId, partnerId });
  const watched = new Set(network.paymentAddresses.map((address) => address.toLowerCase()));
  const payee = rows.map((row) => row.address).find((address) => watched.has(address.toLowerCase()));
  if (payee === undefined) {
    throw problem("no_payment_address", `The partner has no payment address on ${network.name} that the indexer watches.`);
  }
  return getAddress(payee);
}

/**
 * Creates a subscription awaiting the customer's signature, with its idempotency key in the same
 * transaction. A replay answers the same subscription with a new client token (only hashes are
 * kept, so the first cannot be shown again; it stops working).
 */
export async function createSubscription(
  context: Pick<AppContext, "store" | "networks">,
  input: CreateSubscriptionInput,
): Promise<{ subscription: Subscription; clientToken: string; replayed: boolean }> {
  const { network, manager } = subscriptionNetwork(context, input.network);
  const { interval, periodSeconds } = periodOf(input.interval);
  if (input.startAt !== undefined && input.endAt !== undefined && input.endAt <= input.startAt) {
    throw problems.invalidRequest("endAt must be after startAt.", [{ path: "endAt", message: "not after startAt" }]);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await context.store.transaction().execute(async (trx) => {
        const now = Date.now();
        const token = newClientToken();
        const key = { partnerId: input.partnerId, scope: IDEMPOTENCY_SCOPE, key: input.idempotencyKey, hash: input.requestHash };
        const existingId = await findIdempotentResource(trx, key);
        if (existingId !== undefined) {
          const existing = (await findSubscription(trx, existingId)) as Subscription;
          const clientTokenHash = hashSubscriptionToken(token);
          await replaceClientToken(trx, { subscription: existing, clientTokenHash, now });
          return { subscription: { ...existing, clientTokenHash }, clientToken: token, replayed: true };
        }
        const payee = await payeeOf(trx, input.partnerId, network);
        const { subscription } = await insertSubscription(trx, {
          partnerId: input.partnerId,
          externalCustomerId: input.externalCustomerId,
          productName: input.productName,
          amount: input.amount,
          interval,
          periodSeconds,
          startAt: input.startAt ?? null,
          endAt: input.endAt ?? null,
          metadata: input.metadata ?? null,
          successUrl: input.successUrl ?? null,
          cancelUrl: input.cancelUrl ?? null,
          idempotencyKey: input.idempotencyKey,
          clientTokenHash: hashSubscriptionToken(token),
          chainId: network.chainId,
          manager,
          token: network.usdc,
          payee,
          now,
        });
        if (!(await recordIdempotentResource(trx, { ...key, resourceId: subscription.id, now }))) throw new IdempotencyRace();
        return { subscription, clientToken: token, replayed: false };
      });
    } catch (error) {
      // A concurrent request with the same key recorded it first: answer what it created.
      if (error instanceof IdempotencyRace && attempt < 3) continue;
      throw error;
    }
  }
}

/** The partner's own subscription; another partner's is as missing as one that does not exist. */
export async function partnerSubscription(db: Kysely<Database>, params: { partnerId: string; id: string }) {
  const subscription = await findPartnerSubscription(db, params);
  if (subscription === undefined) throw problems.notFound(`Subscription ${params.id}`);
  return subscription;
}

/**
 * The partner's off-chain cancel: the service stops charging. Only the subscriber and the payee
 * can cancel on chain and the service holds neither key (docs/subscriptions.md). `atPeriodEnd`
 * keeps it active until the period paid for ends. A second cancel answers the same.
 */
export async function cancelSubscription(
  context: Pick<AppContext, "store">,
  params: { partnerId: string; id: string; atPeriodEnd: boolean },
): Promise<Subscription> {
  return context.store.transaction().execute(async (trx) => {
    const subscription = await partnerSubscription(trx, params);
    if (subscription.status === "cancelled") return subscription;
    if (params.atPeriodEnd && (subscription.status === "active" || subscription.status === "past_due")) {
      await markCancelAtPeriodEnd(trx, { subscription, now: Date.now() });
      return (await findSubscription(trx, subscription.id)) as Subscription;
    }
    if (!allows(subscriptionTransitions, "cancel", subscription.status)) {
      throw new ProblemError({
        code: "subscription_not_cancellable",
        detail: `This subscription is ${subscription.status}.`,
        extensions: { subscriptionStatus: subscription.status },
      });
    }
    const now = Date.now();
    if (!(await moveSubscription(trx, { subscription, transition: "cancel", facts: { cancelledBy: "partner" }, now }))) {
      throw new Error(`subscription ${subscription.id} changed while cancelled`);
    }
    const cancelled = (await findSubscription(trx, subscription.id)) as Subscription;
    await recordSubscriptionEvent(trx, {
      subscription: cancelled,
      type: "subscription.cancelled",
      extra: { cancelledBy: "partner" },
      now,
    });
    return cancelled;
  });
}

const cursorSchema = z.object({ t: z.number().int(), i: z.string().max(100) });

/** A partner's subscriptions, newest first (`GET /v1/subscriptions`). */
export async function listSubscriptions(
  db: Kysely<Database>,
  params: { partnerId: string; status?: SubscriptionStatus; cursor?: string; limit: number },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: cursorSchema,
    fetch: (after, take) =>
      subscriptionsPage(db, {
        partnerId: params.partnerId,
        status: params.status,
        after: after === undefined ? undefined : { createdAt: after.t, id: after.i },
        take,
      }),
    keyOf: (subscription) => ({ t: subscription.createdAt, i: subscription.id }),
    view: (page) => Promise.all(page.map((subscription) => viewSubscription(db, subscription))),
  });
}

const iso = (epochMs: number | null) => (epochMs === null ? null : new Date(epochMs).toISOString());
const isoSeconds = (unixSeconds: number | undefined | null) =>
  unixSeconds === undefined || unixSeconds === null ? null : new Date(unixSeconds * 1000).toISOString();

/**
 * When the next charge falls due (Unix seconds): the period after the last one charged, or the
 * first period once active; none when the subscription stopped or its terms end first.
 */
export function nextChargeOf(subscription: Subscription, charges: readonly Pick<SubscriptionCharge, "periodIndex">[]) {
  if (subscription.status !== "active" && subscription.status !== "past_due") return null;
  if (subscription.termsStart === null || subscription.termsEnd === null) return null;
  const terms = { start: subscription.termsStart, period: subscription.periodSeconds };
  const last = charges.reduce<bigint>((max, charge) => (charge.periodIndex > max ? charge.periodIndex : max), -1n);
  const next = periodStart(terms, last + 1n);
  if (next >= subscription.termsEnd || subscription.cancelAtPeriodEnd) return null;
  return next;
}

export function chargeView(charge: SubscriptionCharge) {
  return {
    id: charge.id,
    subscriptionId: charge.subscriptionId,
    periodIndex: Number(charge.periodIndex),
    amount: charge.amount.toString(),
    status: charge.status,
    orderId: charge.orderId,
    transactionHash: charge.transactionHash,
    failureReason: charge.failureReason,
    nextRetryAt: iso(charge.nextRetryAt),
    attempts: charge.attempts,
    paidAt: iso(charge.paidAt),
    createdAt: iso(charge.createdAt) as string,
  };
}

/** The partner's view of a subscription, with its charges; `clientToken` only when just issued. */
export async function viewSubscription(
  db: Kysely<Database>,
  subscription: Subscription,
  issued?: { baseUrl: string; clientToken: string },
) {
  const charges = await chargesOfSubscription(db, subscription.id);
  return {
    id: subscription.id,
    status: subscription.status,
    externalCustomerId: subscription.externalCustomerId,
    productName: subscription.productName,
    amount: subscription.amount.toString(),
    interval: subscription.interval,
    periodSeconds: subscription.periodSeconds,
    chainId: subscription.chainId,
    token: subscription.token,
    manager: subscription.manager,
    payee: subscription.payee,
    subscriber: subscription.subscriber,
    onchainId: subscription.onchainId,
    startAt: iso(subscription.startAt),
    endAt: iso(subscription.endAt),
    metadata: subscription.metadata,
    successUrl: subscription.successUrl,
    cancelUrl: subscription.cancelUrl,
    url: issued === undefined ? null : subscribePageUrl(issued.baseUrl, subscription.id, issued.clientToken),
    customerUrl: issued === undefined ? null : customerPageUrl(issued.baseUrl, subscription.id, issued.clientToken),
    clientToken: issued?.clientToken ?? null,
    nextChargeAt: isoSeconds(nextChargeOf(subscription, charges)),
    cancelAtPeriodEnd: subscription.cancelAtPeriodEnd,
    cancelledBy: subscription.cancelledBy,
    cancelledAt: iso(subscription.cancelledAt),
    activatedAt: iso(subscription.activatedAt),
    endedAt: iso(subscription.endedAt),
    expiresAt: iso(subscription.expiresAt) as string,
    createdAt: iso(subscription.createdAt) as string,
    charges: charges.map(chargeView),
  };
}

type SubscriptionEventType =
  | "subscription.activated"
  | "subscription.charged"
  | "subscription.charge_failed"
  | "subscription.past_due"
  | "subscription.cancelled"
  | "subscription.ended";

/** The fields every subscription event carries (event-types.ts `subscription`). */
async function subscriptionEventFields(trx: Kysely<Database>, subscription: Subscription) {
  const charges = await chargesOfSubscription(trx, subscription.id);
  return {
    subscriptionId: subscription.id,
    externalCustomerId: subscription.externalCustomerId,
    status: subscription.status,
    amount: subscription.amount.toString(),
    chainId: subscription.chainId,
    onchainId: subscription.onchainId,
    subscriber: subscription.subscriber,
    payee: subscription.payee,
    nextChargeAt: isoSeconds(nextChargeOf(subscription, charges)),
    metadata: (subscription.metadata ?? {}) as Record<string, string>,
  };
}

/** Records a subscription event inside the transaction of the change it reports. */
export async function recordSubscriptionEvent<type extends SubscriptionEventType>(
  trx: Kysely<Database>,
  params: {
    subscription: Subscription;
    type: type;
    extra: Omit<EventData<type>, keyof Awaited<ReturnType<typeof subscriptionEventFields>>>;
    now: number;
  },
) {
  const data = { ...(await subscriptionEventFields(trx, params.subscription)), ...params.extra } as EventData<type>;
  await recordEvent(trx, {
    partnerId: params.subscription.partnerId,
    type: params.type,
    orderingKey: params.subscription.id,
    data,
    now: params.now,
  });
}

/** The subscription the customer's token opens; any other token is refused alike. */
export async function subscriptionOfToken(db: Kysely<Database>, params: { id: string; clientToken: string }) {
  const subscription = await findSubscription(db, params.id);
  if (subscription === undefined || subscription.clientTokenHash !== hashSubscriptionToken(params.clientToken)) {
    throw problem("invalid_subscription_token", "Use the link the shop sent for this subscription.");
  }
  return subscription;
}
