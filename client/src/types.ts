import type { NetworkName } from "./networks.js";

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

export type CheckoutSessionStatus = "awaiting_payment" | "payment_pending" | "settled" | "expired";

export type PaymentDetails = {
  token: "USDC";
  tokenAddress: string;
  /** The partner payment address the customer sends to. */
  recipient: string;
  /** The exact amount to send: `totalPriceUsdc` plus a sub-cent payment reference. */
  amount: BaseUnits;
  totalPriceUsdc: BaseUnits;
  decimals: 6;
  /** EIP-681 payment link. */
  uri: string;
};

export type CheckoutSession = {
  id: string;
  status: CheckoutSessionStatus;
  expiresAt: Timestamp;
  network: NetworkName;
  chainId: number;
  externalOrderId: string;
  orderId: string;
  purchaseId: Hex;
  product: { externalProductId: string; name: string; category: string; quantity: number };
  shippingRequired: boolean;
  certificate: { enabled: boolean };
  payment: PaymentDetails;
  createdAt: Timestamp;
  /** Where the hosted page sends the customer after settlement / back to the shop ({CHECKOUT_SESSION_ID} substituted). */
  successUrl: string | null;
  cancelUrl: string | null;
  metadata: Record<string, string>;
  customer: CustomerPrefill | null;
  lineItems: LineItem[] | null;
};

export type CustomerPrefill = {
  email?: string;
  name?: string;
  delivery?: {
    name?: string;
    line1?: string;
    line2?: string;
    city?: string;
    postalCode?: string;
    region?: string;
    country?: string;
  };
};

/** Display only; when given, the sum of quantity × unitPriceUsdc must equal totalPriceUsdc. */
export type LineItem = {
  externalProductId: string;
  name: string;
  category?: string;
  quantity: number;
  unitPriceUsdc: BaseUnits;
};

/** The creation answer (seed 2.2): hand `id` and `clientToken` to the browser component, nothing else. */
export type CreatedCheckoutSession = CheckoutSession & {
  /** Short-lived browser credential for this session only; never store it as a long-lived credential. */
  clientToken: string;
  /** The hosted checkout: send the customer here (the client token rides in the fragment). */
  url: string;
};

export type CreateCheckoutSessionParams = {
  externalOrderId: string;
  externalProductId: string;
  productName: string;
  productCategory?: string;
  quantity: number;
  /** The order total in USDC base units, computed by your server from your own catalogue. */
  totalPriceUsdc: bigint | string;
  shippingRequired?: boolean;
  certificate?: { enabled: boolean };
  /** Derive it from your order reference; a new key for a new session after expiry. */
  idempotencyKey: string;
  /** 300 to 86400; default 1800. */
  expiresInSeconds?: number;
  /** Default: the client's network. */
  network?: NetworkName;
  paymentMethod?: "usdc";
  checkoutMode?: "hosted_transfer";
  /** Absolute https: URLs (http: in local mode); {CHECKOUT_SESSION_ID} is replaced by the session id. */
  successUrl?: string;
  cancelUrl?: string;
  /** At most 20 keys; key ≤ 40 characters, value ≤ 500. Echoed in the session, the order and every event. */
  metadata?: Record<string, string>;
  customer?: CustomerPrefill;
  lineItems?: LineItem[];
};

export type Branding = {
  displayName: string;
  /** A path on the service's origin. */
  logoUrl: string | null;
  accentColor: string | null;
  supportUrl: string | null;
  supportEmail: string | null;
};

export type BrandingUpdate = {
  displayName?: string | null;
  /** `#rrggbb` */
  accentColor?: string | null;
  supportUrl?: string | null;
  supportEmail?: string | null;
};

/** Identifies one transfer: what `GET /v1/payments` lists. */
export type PaymentKey = { chainId: number; transactionHash: string; logIndex: number };

export type CertificateStatus = "not_requested" | "awaiting_wallet" | "voucher_issued" | "pending" | "minted";

export type Order = {
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
  fulfilment: { reference: string; fulfilledAt: Timestamp } | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
};

export type FulfilOrderParams = { fulfilmentReference: string; idempotencyKey: string };

export type EventType =
  | "purchase.settled"
  | "certificate.minted"
  | "reward.claimed"
  | "session.expired"
  | "payment.unresolved"
  | "payment.reorged"
  | "payment.restored"
  | "order.fulfilled";

/** The signed envelope of seed 2.6. Unknown future types arrive as plain strings: record them. */
export type SettlementEvent = {
  id: string;
  type: EventType | (string & {});
  createdAt: Timestamp;
  data: {
    externalOrderId?: string;
    orderId?: string;
    purchaseId?: Hex;
    transactionHash?: Hex;
    [field: string]: unknown;
  };
};

export type ListEventsParams = { after?: string; type?: EventType; limit?: number };

export type DeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

export type EventDelivery = {
  id: string;
  eventId: string;
  endpointId: string;
  url: string;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Timestamp | null;
  lastAttemptAt: Timestamp | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Timestamp | null;
  createdAt: Timestamp;
};

export type EventDeliveryWithAttempts = EventDelivery & {
  attempts: {
    id: string;
    startedAt: Timestamp;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
    responseExcerpt: string | null;
  }[];
};

export type WebhookEndpoint = {
  id: string;
  url: string;
  /** `["*"]`: every type, including types added later. */
  events: (EventType | "*")[];
  createdAt: Timestamp;
  previousSecretExpiresAt: Timestamp | null;
};

/** Creation answer: `secret` is shown only here (and by `rotateSecret`). */
export type CreatedWebhookEndpoint = WebhookEndpoint & { secret: string };

export type CreateWebhookEndpointParams = { url: string; events?: (EventType | "*")[] };

export type Transfer = {
  network: NetworkName;
  chainId: number;
  transactionHash: Hex;
  logIndex: number;
  blockNumber: string;
  blockHash: Hex;
  blockTimestamp: Timestamp;
  token: string;
  from: string;
  to: string;
  amount: BaseUnits;
  confirmations: number;
};

export type ListTransfersParams = {
  txHash?: string;
  from?: string;
  to?: string;
  fromBlock?: bigint | number;
  toBlock?: bigint | number;
  network?: NetworkName;
  cursor?: string;
  limit?: number;
};

export type PaymentStatus = "pending" | "settled" | "unresolved" | "refund_requested" | "attached";

export type Payment = {
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

export type ListPaymentsParams = { status?: PaymentStatus; cursor?: string; limit?: number };

export type Health = {
  status: "ok" | "degraded";
  store: { ok: boolean };
  chains: {
    network: NetworkName;
    chainId: number;
    indexedBlock: string | null;
    chainHead: string | null;
    lagBlocks: number | null;
    requiredConfirmations: number;
  }[];
  workers: { worker: string; alive: boolean; lastBeatAt: Timestamp }[];
};
