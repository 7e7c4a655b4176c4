import { z } from "@hono/zod-openapi";

/**
 * Every event type's `data`, declared once. `recordEvent` takes a type's data by
 * this declaration (the compiler refuses a field the declaration lacks), the OpenAPI
 * document publishes each as a `webhooks` entry, and the client's generated types
 * turn them into the `SettlementEvent` union that `constructEvent` returns. To add an
 * event type: add its entry here, record it with `recordEvent`, describe it in
 * docs/events.md and run `npm run client:types`.
 *
 * Amounts are decimal strings of USDC base units; instants are ISO 8601.
 */
const units = z.string().regex(/^\d+$/).openapi({ description: "USDC base units (6 decimals), a decimal string" });
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const instant = z.string().openapi({ description: "ISO 8601" });
const metadata = z
  .record(z.string(), z.string())
  .optional()
  .openapi({ description: "The partner's metadata of the order's checkout session (docs/hosted-checkout.md)" });

/** The order an event is about: present on every event about an order. */
const order = {
  externalOrderId: z.string(),
  orderId: z.string(),
  purchaseId: hex,
  metadata,
};
/** Order fields of an event that may concern no known order (a transfer matched to nothing). */
const maybeOrder = {
  externalOrderId: z.string().optional(),
  orderId: z.string().optional(),
  purchaseId: hex.optional(),
  sessionId: z.string().optional(),
  metadata,
};
const onChain = {
  transactionHash: hex,
  logIndex: z.number().int(),
  network: z.string(),
  chainId: z.number().int(),
};

const paymentMoved = z.object({
  ...maybeOrder,
  ...onChain,
  blockNumber: units.openapi({ description: "A block number, a decimal string" }),
  blockHash: hex,
  payer: address,
  recipient: address,
  amount: units,
  detectedAt: instant,
});

/** A refund may return an unresolved payment that no order claims: the order fields are then absent. */
const refund = {
  ...maybeOrder,
  refundId: z.string(),
  paymentId: z
    .string()
    .optional()
    .openapi({ description: "`<chainId>:<transactionHash>:<logIndex>` of a refunded unresolved payment" }),
  status: z.string().openapi({ description: "The refund's status after the change the event reports" }),
  amount: units,
  reason: z.string(),
  destination: address.nullable(),
  chainId: z.number().int(),
  from: address.openapi({ description: "The payment address the refund is sent from" }),
  transactionHash: hex.optional().openapi({ description: "The refund's transfer, once seen" }),
  logIndex: z.number().int().optional(),
};

/** Every subscription event: the subscription as it is after the change reported. */
const subscription = {
  subscriptionId: z.string(),
  externalCustomerId: z.string(),
  status: z.string().openapi({ description: "The subscription's status after the change the event reports" }),
  amount: units,
  chainId: z.number().int(),
  onchainId: hex.nullable().openapi({ description: "The terms' EIP-712 hash, as the subscription manager names it" }),
  subscriber: address.nullable(),
  payee: address,
  nextChargeAt: instant.nullable(),
  /** Only `subscription.charged` names an order (the charge's, external id `<subscriptionId>:<periodIndex>`); the subscription's own metadata rides here. */
  orderId: z.string().optional(),
  externalOrderId: z.string().optional(),
  metadata: z.record(z.string(), z.string()).optional().openapi({ description: "The partner's metadata of the subscription" }),
};
/** A charge of one period. */
const subscriptionCharge = {
  ...subscription,
  chargeId: z.string(),
  periodIndex: z.number().int(),
};

export const EVENT_DATA = {
  "purchase.settled": z.object({
    ...order,
    sessionId: z.string(),
    ...onChain,
    blockNumber: units,
    confirmations: z.number().int(),
    payer: address,
    recipient: address,
    tokenAddress: address,
    totalPriceUsdc: units,
    amountPaid: units,
    certificate: z.object({ enabled: z.boolean() }),
    settledAt: instant,
    resolution: z.string().optional().openapi({ description: "How an unresolved payment was credited by hand (attach)" }),
    underpaid: z.boolean().optional().openapi({ description: "An attached payment below the total, accepted by the partner" }),
    rewardIds: z.array(z.string()).optional().openapi({ description: "The automatic cashback granted at settlement" }),
  }),
  "certificate.minted": z.object({
    ...order,
    transactionHash: hex,
    network: z.string(),
    chainId: z.number().int(),
    contract: address,
    tokenId: units.openapi({ description: "The token id, a decimal string" }),
    owner: address,
    blockNumber: units,
  }),
  "reward.claimed": z.object({
    ...order,
    rewardId: z.string(),
    recipient: address,
    amount: units,
    transactionHash: hex,
    network: z.string(),
    chainId: z.number().int(),
    contract: address.openapi({ description: "The RewardDistributor that paid it" }),
    funder: address.openapi({ description: "The partner's funding address the USDC came from" }),
    blockNumber: units,
    claimedAt: instant,
  }),
  "reward.reorged": z.object({
    ...order,
    rewardId: z.string(),
    status: z.string().openapi({ description: "The reward's status after the reorg: `voucher_issued`" }),
    amount: units,
    transactionHash: hex.openapi({ description: "The claim that left the chain" }),
    network: z.string(),
    chainId: z.number().int(),
  }),
  "session.expired": z.object({
    ...order,
    sessionId: z.string(),
    reason: z.enum(["expired", "superseded", "order_settled"]),
    totalPriceUsdc: units,
    amount: units,
    expiresAt: instant,
  }),
  "payment.unresolved": z.object({
    ...maybeOrder,
    ...onChain,
    reason: z.string().nullable(),
    payer: address,
    recipient: address,
    amount: units,
    expectedAmount: units.optional(),
  }),
  "payment.reorged": paymentMoved,
  "payment.restored": paymentMoved,
  "order.fulfilled": z.object({ ...order, fulfilmentReference: z.string() }),
  "refund.created": z.object(refund),
  "refund.ready": z.object(refund),
  "refund.succeeded": z.object({ ...refund, transactionHash: hex, logIndex: z.number().int() }),
  "refund.cancelled": z.object(refund),
  "refund.reorged": z.object(refund),
  "subscription.activated": z.object(subscription),
  "subscription.charged": z.object({
    ...subscriptionCharge,
    orderId: z.string(),
    transactionHash: hex,
  }),
  "subscription.charge_failed": z.object({
    ...subscriptionCharge,
    failureReason: z.enum(["insufficient_balance", "insufficient_allowance", "cancelled_on_chain", "reverted"]),
    nextRetryAt: instant.nullable().openapi({ description: "When the charge is tried again; null: no retry is left" }),
  }),
  "subscription.past_due": z.object(subscription),
  "subscription.cancelled": z.object({
    ...subscription,
    cancelledBy: z.enum(["customer", "partner", "retries_exhausted"]),
  }),
  "subscription.ended": z.object(subscription),
} as const;

export type EventType = keyof typeof EVENT_DATA;
export const EVENT_TYPES = Object.keys(EVENT_DATA) as [EventType, ...EventType[]];

/** What `recordEvent` takes as an event's `data` (metadata is added by the outbox). */
export type EventData<type extends EventType> = z.input<(typeof EVENT_DATA)[type]>;

/** The envelope of docs/events.md; `data` amounts are decimal strings of USDC base units. */
export type EventEnvelope<type extends EventType = EventType> = {
  id: string;
  type: type;
  createdAt: string;
  data: EventData<type>;
};

/** The OpenAPI name of an event type's envelope: `purchase.settled` → `PurchaseSettledEvent`. */
export function eventSchemaName(type: EventType): string {
  return `${type
    .split(/[._]/)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join("")}Event`;
}

/** One envelope schema per type, `type` fixed to it: what a webhook request carries. */
export function eventEnvelopeSchema(type: EventType) {
  return z
    .object({
      id: z.string().openapi({ description: "Unique per event; de-duplicate on it" }),
      type: z.literal(type),
      createdAt: instant,
      data: EVENT_DATA[type],
    })
    .openapi(eventSchemaName(type));
}
