import { baseUnitsString } from "./amounts.js";
import { type Query, request, requestCsv, requestText, type Transport } from "./http.js";
import { DEFAULT_BASE_URLS, type NetworkName } from "./networks.js";
import type {
  ApiKey,
  AttachPaymentParams,
  Branding,
  BrandingUpdate,
  CancelSubscriptionParams,
  CheckoutSession,
  CreateCheckoutSessionParams,
  CreatedCheckoutSession,
  CreatedSubscription,
  CreatedWebhookEndpoint,
  CreateRefundParams,
  CreateSubscriptionParams,
  CreateWebhookEndpointParams,
  FulfilOrderParams,
  GrantRewardParams,
  Health,
  LedgerEntry,
  LedgerPage,
  ListEventsParams,
  ListLedgerParams,
  ListOrdersParams,
  ListPaymentsParams,
  ListRefundsParams,
  ListRewardsParams,
  ListSubscriptionsParams,
  ListTransfersParams,
  NewReadOnlyKey,
  Order,
  OrderEvidence,
  OrderPage,
  Page,
  Payment,
  PaymentKey,
  PaymentPage,
  RangeParams,
  Reconciliation,
  Refund,
  RefundAuthorizationRequest,
  RefundRequestParams,
  RefundTestSend,
  RelayedRefund,
  RelayRefundAuthorizationParams,
  RequestBody,
  ResponseBody,
  Reward,
  RewardSettings,
  RewardSettingsUpdate,
  RotatedWebhookSecret,
  SettlementEvent,
  Subscription,
  SubscriptionCharge,
  SubscriptionSettings,
  Transfer,
  WebhookEndpoint,
  WebhookTestResult,
} from "./types.js";

export type ClientOptions = {
  /** The partner API key. Server-side only: never ship it to a browser. */
  apiKey: string;
  /** Which Base network sessions are created on, and the default service address. */
  network: NetworkName;
  /** Overrides the network's default address (`DEFAULT_BASE_URLS`); locally, `baseUrl` of `.data/local.json`. */
  baseUrl?: string;
  /** Per request; default 30 s. */
  timeoutMs?: number;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof globalThis.fetch;
};

export type SettlementClient = ReturnType<typeof createClient>;

const path = (strings: TemplateStringsArray, ...ids: string[]) =>
  strings.reduce(
    (joined, part, index) => joined + part + (index < ids.length ? encodeURIComponent(ids[index] as string) : ""),
    "",
  );

/**
 * The partner client. Every method is one call of docs/quick-start.md and throws a
 * `SettlementApiError` (with the problem `code`) when the service refuses.
 */
export function createClient(options: ClientOptions) {
  if (typeof options.apiKey !== "string" || options.apiKey === "") throw new TypeError("createClient: `apiKey` is required.");
  const baseUrl = options.baseUrl ?? DEFAULT_BASE_URLS[options.network];
  if (baseUrl === undefined) throw new TypeError(`createClient: unknown network ${JSON.stringify(options.network)}.`);
  const transport: Transport = {
    baseUrl,
    apiKey: options.apiKey,
    timeoutMs: options.timeoutMs ?? 30_000,
    fetch: options.fetch ?? globalThis.fetch,
  };
  const get = <answer>(p: string, query?: Query) => request<answer>(transport, { method: "GET", path: p, query });
  const post = <answer>(p: string, body: unknown = {}) => request<answer>(transport, { method: "POST", path: p, body });

  /** Follows `nextCursor` page by page; `next(cursor)` fetches the page after `cursor`. */
  async function* paginate<item>(first: Page<item>, next: (cursor: string) => Promise<Page<item>>): AsyncGenerator<item> {
    let page = first;
    for (;;) {
      yield* page.data;
      if (page.nextCursor === null) return;
      page = await next(page.nextCursor);
    }
  }

  const events = {
    /**
     * One page of your events, oldest first; `after`: the id of the last event you processed,
     * or `cursor`: the `nextCursor` of the previous page (one of the two).
     */
    list: (params: ListEventsParams = {}) => get<Page<SettlementEvent>>("/v1/events", params),
    /** Every event after `after` (or `cursor`), across pages (reconciliation). */
    async *iterate(params: ListEventsParams = {}): AsyncGenerator<SettlementEvent> {
      yield* paginate(await events.list(params), (cursor) => events.list({ ...params, after: undefined, cursor }));
    },
    retrieve: (eventId: string) => get<SettlementEvent>(path`/v1/events/${eventId}`),
    /** One delivery per endpoint, with every attempt. */
    deliveries: async (eventId: string) =>
      (await get<ResponseBody<"/v1/events/{id}/deliveries", "get">>(path`/v1/events/${eventId}/deliveries`)).data,
    /** Queues the same event (same id and body) again; to one endpoint, or to every subscribed endpoint. */
    redeliver: async (eventId: string, params: RequestBody<"/v1/events/{id}/redeliver", "post"> = {}) =>
      (await post<ResponseBody<"/v1/events/{id}/redeliver", "post", 202>>(path`/v1/events/${eventId}/redeliver`, params)).data,
  };

  const webhookEndpoints = {
    create: (params: CreateWebhookEndpointParams) => post<CreatedWebhookEndpoint>("/v1/webhook-endpoints", params),
    list: (params: { cursor?: string; limit?: number } = {}) =>
      get<ResponseBody<"/v1/webhook-endpoints", "get">>("/v1/webhook-endpoints", params),
    async *iterate(): AsyncGenerator<WebhookEndpoint> {
      yield* paginate(await webhookEndpoints.list(), (cursor) => webhookEndpoints.list({ cursor }));
    },
    retrieve: (endpointId: string) => get<WebhookEndpoint>(path`/v1/webhook-endpoints/${endpointId}`),
    delete: (endpointId: string) =>
      request<ResponseBody<"/v1/webhook-endpoints/{id}", "delete">>(transport, {
        method: "DELETE",
        path: path`/v1/webhook-endpoints/${endpointId}`,
      }),
    /** New secret, shown only here; the old one keeps signing beside it until `previousSecretExpiresAt`. */
    rotateSecret: (endpointId: string, params: RequestBody<"/v1/webhook-endpoints/{id}/rotate-secret", "post"> = {}) =>
      post<RotatedWebhookSecret>(path`/v1/webhook-endpoints/${endpointId}/rotate-secret`, params),
    /** Sends one signed `webhook.test` event to the endpoint now (nothing recorded, nothing retried) and says how it answered. */
    sendTest: (endpointId: string) => post<WebhookTestResult>(path`/v1/webhook-endpoints/${endpointId}/test`),
  };

  const transfers = {
    list: (params: ListTransfersParams = {}) =>
      get<Page<Transfer>>("/v1/transfers", {
        ...params,
        fromBlock: params.fromBlock === undefined ? undefined : BigInt(params.fromBlock),
        toBlock: params.toBlock === undefined ? undefined : BigInt(params.toBlock),
      } satisfies Query),
    async *iterate(params: Omit<ListTransfersParams, "cursor"> = {}): AsyncGenerator<Transfer> {
      yield* paginate(await transfers.list(params), (cursor) => transfers.list({ ...params, cursor }));
    },
  };

  const paymentPath = (key: PaymentKey) =>
    `/v1/payments/${key.chainId}/${encodeURIComponent(key.transactionHash)}/${key.logIndex}`;
  const payments = {
    list: (params: ListPaymentsParams = {}) => get<PaymentPage>("/v1/payments", params),
    /**
     * Credits one of your unresolved payments to one of your orders: the order settles
     * (`purchase.settled` with `resolution: "attached"`, and `underpaid: true` below the total).
     */
    attach: (key: PaymentKey, params: AttachPaymentParams) =>
      post<ResponseBody<"/v1/payments/{chainId}/{transactionHash}/{logIndex}/attach", "post">>(`${paymentPath(key)}/attach`, {
        orderId: params.orderId,
      }),
    /** Records that you send the money back yourself; the service never moves money. */
    requestRefund: (key: PaymentKey, params: RefundRequestParams = {}) =>
      post<ResponseBody<"/v1/payments/{chainId}/{transactionHash}/{logIndex}/refund-requested", "post">>(
        `${paymentPath(key)}/refund-requested`,
        params,
      ),
    async *iterate(params: Omit<ListPaymentsParams, "cursor"> = {}): AsyncGenerator<Payment> {
      yield* paginate(await payments.list(params), (cursor) => payments.list({ ...params, cursor }));
    },
  };

  const refunds = {
    /**
     * Refunds a paid order (in part or in full) or an unresolved payment. Without
     * `destination` the refund waits for your customer's address: send them `customerUrl`.
     * The same idempotency key answers the same refund again.
     */
    create: (params: CreateRefundParams) =>
      post<Refund>("/v1/refunds", {
        ...params,
        amount: params.amount === undefined ? undefined : baseUnitsString(params.amount, "amount"),
      }),
    list: (params: ListRefundsParams = {}) => get<Page<Refund>>("/v1/refunds", params),
    async *iterate(params: Omit<ListRefundsParams, "cursor"> = {}): AsyncGenerator<Refund> {
      yield* paginate(await refunds.list(params), (cursor) => refunds.list({ ...params, cursor }));
    },
    retrieve: (refundId: string) => get<Refund>(path`/v1/refunds/${refundId}`),
    /** Cancels a refund no money moved for yet (`awaiting_destination` or `ready`). */
    cancel: (refundId: string) => post<Refund>(path`/v1/refunds/${refundId}/cancel`),
    /**
     * Local mode only: sends a `ready` refund from its payment address with the test
     * account. The refund completes once the index shows the transfer (poll `retrieve`).
     */
    testSend: (refundId: string) => post<RefundTestSend>(path`/v1/refunds/${refundId}/test-send`),
    /**
     * What the payment address signs to send a `ready` refund without ETH: the token's
     * EIP-712 domain and a `TransferWithAuthorization` (EIP-3009) of exactly the refund.
     */
    authorizationRequest: (refundId: string) => get<RefundAuthorizationRequest>(path`/v1/refunds/${refundId}/authorization`),
    /**
     * Hands the payment address's signed authorization to the relayer, which submits it;
     * the refund stays `ready` until the index shows the transfer.
     */
    relayAuthorization: (refundId: string, params: RelayRefundAuthorizationParams) =>
      post<RelayedRefund>(path`/v1/refunds/${refundId}/authorization`, params),
    /** A `ready` refund's EIP-681 link as an SVG QR code (the SVG's text), for the payment address's wallet to scan. */
    qrSvg: (refundId: string) => requestText(transport, { path: path`/v1/refunds/${refundId}/qr`, accept: "image/svg+xml" }),
  };

  const subscriptions = {
    /**
     * Creates a subscription awaiting the customer's signature (or answers the original one for a
     * repeated idempotency key). Send the customer to `url`; every period's charge is settled from
     * the chain and becomes an order (`subscription.charged` names it).
     */
    create: (params: CreateSubscriptionParams) =>
      post<CreatedSubscription>("/v1/subscriptions", { ...params, amount: baseUnitsString(params.amount, "amount") }),
    /** One subscription with its charges. */
    retrieve: (subscriptionId: string) => get<Subscription>(path`/v1/subscriptions/${subscriptionId}`),
    /** Your subscriptions, newest first; `status` narrows. */
    list: (params: ListSubscriptionsParams = {}) => get<Page<Subscription>>("/v1/subscriptions", params),
    async *iterate(params: Omit<ListSubscriptionsParams, "cursor"> = {}): AsyncGenerator<Subscription> {
      yield* paginate(await subscriptions.list(params), (cursor) => subscriptions.list({ ...params, cursor }));
    },
    /** A subscription's charges, one per period, oldest first (each paid one names its order). */
    charges: async (subscriptionId: string): Promise<SubscriptionCharge[]> =>
      (await subscriptions.retrieve(subscriptionId)).charges,
    /**
     * Stops charging (off chain: the customer's registration stays on the chain, the service
     * sends no more charges); `atPeriodEnd` lets the period paid for run out first.
     */
    cancel: (subscriptionId: string, params: CancelSubscriptionParams = {}) =>
      post<Subscription>(path`/v1/subscriptions/${subscriptionId}/cancel`, params),
    /** The retry schedule of failed charges (seconds of chain time after each failure). */
    settings: () => get<SubscriptionSettings>("/v1/subscriptions/settings"),
    /** Replaces the retry schedule; a charge that failed already keeps its retry time. */
    updateSettings: (params: SubscriptionSettings) =>
      request<SubscriptionSettings>(transport, { method: "PUT", path: "/v1/subscriptions/settings", body: params }),
  };

  const branding = {
    retrieve: () => get<Branding>("/v1/branding"),
    update: (params: BrandingUpdate) => request<Branding>(transport, { method: "PATCH", path: "/v1/branding", body: params }),
  };

  const rewards = {
    settings: {
      /** Funding address, cashback, and the funding address's allowance and balance against outstanding rewards. */
      retrieve: () => get<RewardSettings>("/v1/rewards/settings"),
      /** A partial update: a field left out keeps its value. */
      update: (params: RewardSettingsUpdate) =>
        request<RewardSettings>(transport, { method: "PUT", path: "/v1/rewards/settings", body: params }),
    },
    /** Grants a reward on a settled order; the same idempotency key answers the same reward. */
    grant: (orderId: string, params: GrantRewardParams) =>
      post<Reward>(path`/v1/orders/${orderId}/rewards`, {
        amount: baseUnitsString(params.amount, "amount"),
        idempotencyKey: params.idempotencyKey,
      }),
    list: (params: ListRewardsParams = {}) => get<Page<Reward>>("/v1/rewards", params),
    async *iterate(params: Omit<ListRewardsParams, "cursor"> = {}): AsyncGenerator<Reward> {
      yield* paginate(await rewards.list(params), (cursor) => rewards.list({ ...params, cursor }));
    },
    retrieve: (rewardId: string) => get<Reward>(path`/v1/rewards/${rewardId}`),
    /** Revokes a reward nothing is paying; with a voucher out, only after its deadline (`reward_not_revocable`). */
    revoke: (rewardId: string, params: { reason?: string } = {}) => post<Reward>(path`/v1/rewards/${rewardId}/revoke`, params),
  };

  // Accounting (docs/accounting.md): block numbers go out as decimal strings, like every amount.
  const rangeQuery = <params extends RangeParams>(params: params): Query => ({
    ...params,
    fromBlock: params.fromBlock === undefined ? undefined : BigInt(params.fromBlock),
    toBlock: params.toBlock === undefined ? undefined : BigInt(params.toBlock),
  });

  const ledger = {
    /** One page of the range's movements through your payment addresses, each with its evidence and `kind`. */
    list: (params: ListLedgerParams) => get<LedgerPage>("/v1/ledger", rangeQuery(params)),
    /** Every entry of the range, across pages. */
    async *iterate(params: Omit<ListLedgerParams, "cursor">): AsyncGenerator<LedgerEntry> {
      yield* paginate(await ledger.list(params), (cursor) => ledger.list({ ...params, cursor }));
    },
    /** The whole range as CSV (RFC 4180, the columns of docs/accounting.md), streamed. */
    csv: (params: RangeParams) => requestCsv(transport, { path: "/v1/ledger", query: rangeQuery(params) }),
  };

  const reports = {
    reconciliation: {
      /** Per payment address: opening and closing balances from the index, sums per kind, the chain's balance, `reconciled`. */
      retrieve: (params: RangeParams) => get<Reconciliation>("/v1/reports/reconciliation", rangeQuery(params)),
      csv: (params: RangeParams) => requestCsv(transport, { path: "/v1/reports/reconciliation", query: rangeQuery(params) }),
    },
  };

  const apiKeys = {
    /** A read-only key (`rk_…`) for your accountant: every GET, nothing else. `key` is shown in this answer only. */
    create: () => post<NewReadOnlyKey>("/v1/api-keys", { scope: "read" }),
    list: (params: { cursor?: string; limit?: number } = {}) => get<Page<ApiKey>>("/v1/api-keys", params),
    async *iterate(): AsyncGenerator<ApiKey> {
      yield* paginate(await apiKeys.list(), (cursor) => apiKeys.list({ cursor }));
    },
    /** Revokes a read-only key (full keys are revoked from the console or the operator CLI). */
    revoke: (keyId: string) => request<undefined>(transport, { method: "DELETE", path: path`/v1/api-keys/${keyId}` }),
  };

  return {
    network: options.network,
    baseUrl,
    checkout: {
      sessions: {
        /**
         * Creates a session (or answers the original one for a repeated idempotency
         * key, or the settled one when the order is already paid). `totalPriceUsdc`
         * is a bigint or an integer string of base units; it is sent as a string.
         */
        create: async (params: CreateCheckoutSessionParams) =>
          post<CreatedCheckoutSession>("/v1/checkout/sessions", {
            paymentMethod: "usdc",
            checkoutMode: "hosted_transfer",
            network: options.network,
            ...params,
            totalPriceUsdc: baseUnitsString(params.totalPriceUsdc, "totalPriceUsdc"),
          }),
        retrieve: (sessionId: string) => get<CheckoutSession>(path`/v1/checkout/sessions/${sessionId}`),
      },
    },
    orders: {
      retrieve: (orderId: string) => get<Order>(path`/v1/orders/${orderId}`),
      /** Marks a settled order fulfilled; the same key answers the same result again. */
      fulfil: (orderId: string, params: FulfilOrderParams) => post<Order>(path`/v1/orders/${orderId}/fulfilment`, params),
      /** Orders created in a range (accounting), one page; `status` narrows. */
      list: (params: ListOrdersParams) => get<OrderPage>("/v1/orders", rangeQuery(params)),
      async *iterate(params: Omit<ListOrdersParams, "cursor">): AsyncGenerator<OrderPage["data"][number]> {
        let page = await get<OrderPage>("/v1/orders", rangeQuery(params));
        for (;;) {
          yield* page.data;
          if (page.nextCursor === null) return;
          page = await get<OrderPage>("/v1/orders", rangeQuery({ ...params, cursor: page.nextCursor }));
        }
      },
      /** The range's orders as CSV, streamed. */
      csv: (params: Omit<ListOrdersParams, "cursor" | "limit">) =>
        requestCsv(transport, { path: "/v1/orders", query: rangeQuery(params) }),
      /** The order's on-chain evidence: transfers with block hash and confirmations now, rule, refunds, rewards, events. */
      evidence: (orderId: string) => get<OrderEvidence>(path`/v1/orders/${orderId}/evidence`),
    },
    events,
    webhookEndpoints,
    transfers,
    payments,
    refunds,
    subscriptions,
    branding,
    rewards,
    ledger,
    reports,
    apiKeys,
    /** Indexer head and lag per chain, store and workers; a degraded service answers too (status "degraded"). */
    health: () => request<Health>(transport, { method: "GET", path: "/v1/health", accept: [503] }),
  };
}
