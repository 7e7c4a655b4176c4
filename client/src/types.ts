import type { components, paths, webhooks } from "./generated/openapi.js";
import type { NetworkName } from "./networks.js";

// Every request and response type here comes from the service's OpenAPI document
// (./generated/openapi.ts, written by `npm run client:types`); this file only names
// them. The few exceptions say why: where the client accepts more than the wire (a
// bigint amount), or where the document does not describe an answer yet.

type Schemas = components["schemas"];
type Method = "get" | "post" | "put" | "patch" | "delete";
type Operation<path extends keyof paths, method extends Method> = paths[path][method];

/** The JSON body that `method path` answers with `status`, as the service's document describes it. */
export type ResponseBody<path extends keyof paths, method extends Method, status extends number = 200> =
  Operation<path, method> extends { responses: { [code in status]: { content: { "application/json": infer body } } } }
    ? body
    : never;

/** The JSON body `method path` takes, as the service's document describes it. */
export type RequestBody<path extends keyof paths, method extends Method> =
  Operation<path, method> extends { requestBody?: { content: { "application/json": infer body } } } ? body : never;

/** The query parameters of `method path`, as the service's document describes them. */
export type QueryParameters<path extends keyof paths, method extends Method> =
  Operation<path, method> extends { parameters: { query?: infer query } } ? NonNullable<query> : never;

/**
 * `documented` once the service's document describes the answer (an operation whose
 * schema is still empty generates `unknown`); until then, `known`: the answer as the
 * service sends it today. Regenerating the types switches to the document by itself.
 */
type DocumentedOr<documented, known> = unknown extends documented ? known : documented;

/**
 * USDC base units (6 decimals) as the API sends them: a decimal string, so
 * `"25000123"` is 25.000123 USDC. `toBaseUnits()` gives the bigint, `formatUsdc()`
 * the display string.
 */
export type BaseUnits = string;
/** ISO 8601 instant. */
export type Timestamp = string;
export type Hex = `0x${string}`;

/** A page of a list; pass `nextCursor` back to get the next one (null: no more). */
export type Page<item> = { data: item[]; nextCursor: string | null };

export type CheckoutSession = Schemas["CheckoutSession"];
export type CheckoutSessionStatus = CheckoutSession["status"];
export type PaymentDetails = CheckoutSession["payment"];

/** The creation answer (docs/quick-start.md): hand `id` and `clientToken` to the browser component, nothing else. */
export type CreatedCheckoutSession = ResponseBody<"/v1/checkout/sessions", "post", 201>;

type CreateCheckoutSessionBody = RequestBody<"/v1/checkout/sessions", "post">;
export type CustomerPrefill = NonNullable<CreateCheckoutSessionBody["customer"]>;
/** Display only; when given, the sum of quantity × unitPriceUsdc must equal totalPriceUsdc. */
export type LineItem = NonNullable<CreateCheckoutSessionBody["lineItems"]>[number];

/**
 * The body of `POST /v1/checkout/sessions`, except that the client also takes the total
 * as a bigint (sent as a decimal string) and fills in the constant `paymentMethod`,
 * `checkoutMode` and its own `network`.
 */
export type CreateCheckoutSessionParams = Omit<
  CreateCheckoutSessionBody,
  "totalPriceUsdc" | "paymentMethod" | "checkoutMode" | "network"
> & {
  /** The order total in USDC base units, computed by your server from your own catalogue. */
  totalPriceUsdc: bigint | string;
  paymentMethod?: CreateCheckoutSessionBody["paymentMethod"];
  checkoutMode?: CreateCheckoutSessionBody["checkoutMode"];
  /** Default: the client's network. */
  network?: NetworkName;
};

export type Branding = Schemas["Branding"];
export type BrandingUpdate = RequestBody<"/v1/branding", "patch">;

/** Identifies one transfer: what `GET /v1/payments` lists. */
export type PaymentKey = { chainId: number; transactionHash: string; logIndex: number };

export type CertificateStatus = "not_requested" | "awaiting_wallet" | "voucher_issued" | "pending" | "minted";

/** `GET /v1/orders/{orderId}` as the service answers it today; the document does not describe it yet. */
type KnownOrder = {
  id: string;
  externalOrderId: string;
  purchaseId: Hex;
  status: string;
  network: NetworkName | null;
  chainId: number | null;
  totalPriceUsdc: BaseUnits | null;
  amountPaid: BaseUnits | null;
  session: { id: string; status: CheckoutSessionStatus; expiresAt: Timestamp; payment: PaymentDetails } | null;
  payment: {
    transactionHash: Hex;
    logIndex: number;
    blockNumber: string;
    from: string;
    to: string;
    amount: BaseUnits;
    confirmations: number | null;
    requiredConfirmations: number | null;
    minedAt: Timestamp;
  } | null;
  contact: { email: string; name?: string; phone?: string } | null;
  delivery: Record<string, string> | null;
  certificate: {
    enabled: boolean;
    status: CertificateStatus;
    contract: string | null;
    tokenId: string | null;
    owner: string | null;
    mintTransactionHash: Hex | null;
  };
  /** The ids of the order's rewards, oldest first (docs/rewards.md). */
  rewardIds: string[];
  fulfilment: { reference: string; fulfilledAt: Timestamp } | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
};
export type Order = DocumentedOr<ResponseBody<"/v1/orders/{orderId}", "get">, KnownOrder>;

export type FulfilOrderParams = RequestBody<"/v1/orders/{orderId}/fulfilment", "post">;

export type EventType = Schemas["EventEnvelope"]["type"];

type EventBodies = {
  [type in keyof webhooks]: webhooks[type]["post"] extends { requestBody?: { content: { "application/json": infer body } } }
    ? body
    : never;
};

/**
 * The signed envelope of docs/events.md, one member per event type the service
 * declares (the document's `webhooks`): `switch (event.type)` narrows `event.data`
 * to that type's fields with no cast. Types added after this version of the library
 * still arrive at run time: give your `switch` a `default` that records and ignores.
 */
export type SettlementEvent = EventBodies[keyof EventBodies];

/** The event of one type: `SettlementEventOf<"purchase.settled">["data"]["amountPaid"]`. */
export type SettlementEventOf<type extends EventType> = Extract<SettlementEvent, { type: type }>;

export type ListEventsParams = QueryParameters<"/v1/events", "get">;

export type EventDelivery = Schemas["EventDelivery"];
export type DeliveryStatus = EventDelivery["status"];
export type EventDeliveryWithAttempts = ResponseBody<"/v1/events/{id}/deliveries", "get">["data"][number];

export type WebhookEndpoint = Schemas["WebhookEndpoint"];
/** Creation answer: `secret` is shown only here (and by `rotateSecret`). */
export type CreatedWebhookEndpoint = ResponseBody<"/v1/webhook-endpoints", "post", 201>;
export type CreateWebhookEndpointParams = RequestBody<"/v1/webhook-endpoints", "post">;
export type RotatedWebhookSecret = ResponseBody<"/v1/webhook-endpoints/{id}/rotate-secret", "post">;
export type WebhookTestResult = ResponseBody<"/v1/webhook-endpoints/{id}/test", "post">;

export type Transfer = Schemas["Transfer"];
/** The query of `GET /v1/transfers`; the client also takes block numbers as bigint or number. */
export type ListTransfersParams = Omit<QueryParameters<"/v1/transfers", "get">, "fromBlock" | "toBlock"> & {
  fromBlock?: bigint | number | string;
  toBlock?: bigint | number | string;
};

export type ListPaymentsParams = QueryParameters<"/v1/payments", "get">;
export type PaymentStatus = NonNullable<ListPaymentsParams["status"]>;

/** An item of `GET /v1/payments` as the service answers it today; the document does not describe it yet. */
type KnownPayment = {
  chainId: number;
  transactionHash: Hex;
  logIndex: number;
  status: PaymentStatus;
  /** For unresolved payments submitted on a session: `underpaid`, `overpaid`, `late`; else why nothing matched. */
  reason: string | null;
  sessionId: string | null;
  orderId: string | null;
  /** The amount the linked session asked for. */
  expectedAmount: BaseUnits | null;
  from: string;
  to: string;
  amount: BaseUnits;
  blockNumber: string;
  minedAt: Timestamp;
  resolution: string | null;
};
export type PaymentPage = DocumentedOr<ResponseBody<"/v1/payments", "get">, Page<KnownPayment>>;
export type Payment = PaymentPage extends Page<infer item> ? item : never;
export type AttachPaymentParams = RequestBody<"/v1/payments/{chainId}/{transactionHash}/{logIndex}/attach", "post">;
export type RefundRequestParams = RequestBody<"/v1/payments/{chainId}/{transactionHash}/{logIndex}/refund-requested", "post">;

export type Health = Schemas["Health"];

/** The problem+json body of a refused call (RFC 9457), with the service's stable `code`. */
export type Problem = Schemas["Problem"];

/** A reward (USDC cashback claimed on chain, docs/rewards.md). */
export type Reward = ResponseBody<"/v1/rewards/{rewardId}", "get">;
export type RewardSettings = ResponseBody<"/v1/rewards/settings", "get">;
export type RewardSettingsUpdate = RequestBody<"/v1/rewards/settings", "put">;
export type ListRewardsParams = { orderId?: string; status?: Reward["status"]; cursor?: string; limit?: number };
/** `amount` in base units, as a bigint or an integer string; sent as a string. */
export type GrantRewardParams = { amount: bigint | string; idempotencyKey: string };
// Refunds (docs/refunds.md)
export type Refund = Schemas["Refund"];
export type RefundStatus = Refund["status"];
export type RefundReason = Refund["reason"];
export type RefundInstructions = NonNullable<Refund["instructions"]>;
/** `amount` is a bigint or an integer string of base units; it is sent as a string. Name `orderId` or `payment`. */
export type CreateRefundParams = Omit<RequestBody<"/v1/refunds", "post">, "amount"> & { amount?: bigint | string };
export type ListRefundsParams = QueryParameters<"/v1/refunds", "get">;
/** The test account's send (local mode): its transaction and the refund as it reads now. */
export type RefundTestSend = ResponseBody<"/v1/refunds/{id}/test-send", "post">;
/** What the payment address signs (EIP-712) to send a refund without ETH. */
export type RefundAuthorizationRequest = ResponseBody<"/v1/refunds/{id}/authorization", "get">;
/** The signed authorization: `authorization` (the request's `message`), `signature`, and the domain's chain. */
export type RelayRefundAuthorizationParams = RequestBody<"/v1/refunds/{id}/authorization", "post">;
export type RelayedRefund = ResponseBody<"/v1/refunds/{id}/authorization", "post">;
// Subscriptions (docs/subscriptions.md)
export type Subscription = Schemas["Subscription"];
export type SubscriptionStatus = Subscription["status"];
export type SubscriptionCharge = Subscription["charges"][number];
/** The creation answer: hand `url` (or `id` and `clientToken`) to the customer; `clientToken` is in this answer only. */
export type CreatedSubscription = ResponseBody<"/v1/subscriptions", "post", 201>;
/** `amount` (each period, base units) is a bigint or an integer string; it is sent as a string. */
export type CreateSubscriptionParams = Omit<RequestBody<"/v1/subscriptions", "post">, "amount"> & { amount: bigint | string };
export type ListSubscriptionsParams = QueryParameters<"/v1/subscriptions", "get">;
export type CancelSubscriptionParams = RequestBody<"/v1/subscriptions/{id}/cancel", "post">;
export type SubscriptionSettings = Schemas["SubscriptionSettings"];

// Accounting (docs/accounting.md): ranges, the ledger, reconciliation, order evidence, read-only keys.

/** A range: `fromBlock`/`toBlock` (both inclusive) or `from`/`to` (ISO 8601, `to` exclusive); `partnerId` for auditor keys. */
export type RangeParams = Omit<QueryParameters<"/v1/reports/reconciliation", "get">, "fromBlock" | "toBlock"> & {
  fromBlock?: bigint | number | string;
  toBlock?: bigint | number | string;
};
export type LedgerEntry = Schemas["LedgerEntry"];
export type LedgerKind = LedgerEntry["kind"];
export type ListLedgerParams = RangeParams & { cursor?: string; limit?: number };
export type LedgerPage = ResponseBody<"/v1/ledger", "get">;
export type Reconciliation = Schemas["Reconciliation"];
export type ReconciliationRow = Reconciliation["data"][number];
export type ListOrdersParams = RangeParams & Omit<QueryParameters<"/v1/orders", "get">, keyof RangeParams>;
export type OrderPage = ResponseBody<"/v1/orders", "get">;
/** An order's evidence (transfers, rule, refunds, rewards, events with deliveries); see docs/accounting.md. */
export type OrderEvidence = ResponseBody<"/v1/orders/{orderId}/evidence", "get">;
export type ApiKey = Schemas["ApiKey"];
/** A new read-only key: `key` is shown in this answer only. */
export type NewReadOnlyKey = Schemas["NewReadOnlyKey"];
