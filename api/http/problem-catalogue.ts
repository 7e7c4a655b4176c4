import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The one registry of problem codes: every `code` a problem+json answer of this
 * service can carry, with its HTTP status, its title and when it happens. Thrown
 * errors (`ProblemError` takes a `ProblemCode`, so an unregistered code does not
 * compile), the OpenAPI error responses (`errorResponses`) and the catalogue at
 * `/docs/problems` (where every problem's `type` URI points) all read it.
 *
 * A code answered with more than one status lists them all, the usual one first.
 */
export type ProblemDefinition = {
  readonly status: ContentfulStatusCode | readonly [ContentfulStatusCode, ...ContentfulStatusCode[]];
  readonly title: string;
  readonly meaning: string;
};

export const PROBLEM_REGISTRY = {
  // 400
  invalid_request: {
    status: 400,
    title: "The request is not valid",
    meaning: "The body, path or query does not validate; `errors` lists each field.",
  },
  invalid_cursor: {
    status: 400,
    title: "The cursor is not valid",
    meaning:
      "A `cursor` that this service did not issue (malformed, tampered or out of range), or one naming another partner's row.",
  },
  invalid_webhook_url: {
    status: 400,
    title: "The webhook URL is not allowed",
    meaning:
      "A webhook endpoint URL that is not `https:` (outside local mode), carries credentials, or names a private, loopback or link-local host.",
  },
  // 401
  unauthenticated: {
    status: 401,
    title: "Authentication is required",
    meaning: "Missing, malformed, wrong or revoked API key or portal session.",
  },
  invalid_client_token: {
    status: 401,
    title: "The client token is not valid for this session",
    meaning: "The client token does not belong to this checkout session.",
  },
  invalid_challenge: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the signed message is not a sign-in challenge this service issued.",
  },
  challenge_used: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: this challenge was already used to sign in; request a new one.",
  },
  challenge_expired: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the challenge expired, or its issue time was changed; request a new one.",
  },
  message_altered: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the signed text differs from the challenge issued; sign it unchanged.",
  },
  wrong_domain: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the challenge was issued for another domain.",
  },
  wrong_uri: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the challenge was issued for another URI.",
  },
  wrong_chain: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the message names another chain than the one challenged, or that chain is not enabled.",
  },
  wrong_address: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the message names another wallet than the one challenged.",
  },
  invalid_signature: {
    status: 401,
    title: "The sign-in was not accepted",
    meaning: "Portal sign-in: the signature is not the challenged wallet's (EOA, EIP-1271 or EIP-6492) over this message.",
  },
  // 403
  forbidden: { status: 403, title: "Not allowed", meaning: "Authenticated, but this role or owner may not do this." },
  cross_origin_refused: {
    status: 403,
    title: "Only the service's own pages may call this",
    meaning:
      "Local mode's test-account sign-in was called from another origin (`Origin`, or a browser's `Sec-Fetch-Site`), or a sign-in route through a host name that is not the service's (`PUBLIC_BASE_URL`'s host, else a loopback name): a web page may not sign itself in, also through DNS rebinding.",
  },
  wrong_portal: {
    status: [403, 401],
    title: "Not allowed",
    meaning:
      "403: a session of another portal (investor, issuer, admin, partner) calls this portal's route. 401 at sign-in: the challenge was issued for another portal.",
  },
  portal_not_allowed: {
    status: 403,
    title: "This wallet cannot use this portal",
    meaning:
      "The wallet may not sign in to this portal (not an issuer, admin or member), or is not a member of the partner named in `X-Partner-Id`.",
  },
  wallet_frozen: {
    status: 403,
    title: "This wallet is frozen",
    meaning: "RWA: a compliance officer froze the investor's wallet; it can neither buy nor claim certificates.",
  },
  not_eligible: {
    status: 403,
    title: "This wallet may not buy into this offering",
    meaning: "RWA: the investor fails the offering's rules (KYC, jurisdiction, accreditation); `detail` names each failed rule.",
  },
  recipient_not_eligible: {
    status: 403,
    title: "This wallet may not receive the certificate",
    meaning:
      "RWA: the certificate's recipient fails the offering's rules (`reasons`: wallet_frozen, kyc_required, jurisdiction_…, accreditation_…), at purchase or at voucher issue.",
  },
  // 404
  not_found: {
    status: 404,
    title: "Not found",
    meaning:
      "No such resource (or not yours), or no route at this path under `/v1` or `/api` (a trailing slash is a different path; the detail names the path without it).",
  },
  // 405
  method_not_allowed: {
    status: 405,
    title: "Method not allowed",
    meaning:
      "The path exists but not with this method; the `Allow` header (and `allow` in the body) lists the methods it accepts.",
  },
  payment_not_found: {
    status: 404,
    title: "Payment not found",
    meaning: "No transaction with this hash on the session's network (reason `not_found`).",
  },
  certificate_not_found: {
    status: 404,
    title: "No certificate found",
    meaning: "Certificate verification: no certificate was minted for this token id, purchase or transaction.",
  },
  // 409
  idempotency_conflict: {
    status: 409,
    title: "This idempotency key was used with a different request",
    meaning: "The idempotency key was used with a different body.",
  },
  payment_in_progress: {
    status: 409,
    title: "A payment for this order is being confirmed",
    meaning: "A payment of this order is waiting for confirmations.",
  },
  order_not_commerce: {
    status: 409,
    title: "This order belongs to another kind of checkout",
    meaning: "The externalOrderId names an investor's RWA purchase, which the commerce API cannot open, pay or claim.",
  },
  order_not_rwa: {
    status: 409,
    title: "This order belongs to another kind of checkout",
    meaning: "A purchase's order id is already used by a commerce order.",
  },
  session_not_open: {
    status: 409,
    title: "The session is not open",
    meaning: "The session no longer takes contact or delivery details, or a new payment: it is paid or expired.",
  },
  order_not_settled: {
    status: 409,
    title: "Only a settled order can be fulfilled",
    meaning: "Only a settled order can be fulfilled.",
  },
  order_already_fulfilled: {
    status: 409,
    title: "The order is already fulfilled",
    meaning: "The order was fulfilled under another idempotency key.",
  },
  payment_not_unresolved: {
    status: 409,
    title: "Only an unresolved payment can be resolved by hand",
    meaning: "Only an unresolved payment can be attached or marked for refund.",
  },
  order_already_settled: {
    status: 409,
    title: "The order is already paid",
    meaning: "The order is already paid: mark the extra payment for refund instead.",
  },
  payment_of_another_partner: {
    status: 409,
    title: "The payment went to another partner's address",
    meaning: "The payment went to another partner's address; it can only be credited to that partner's orders (admins too).",
  },
  certificate_not_available: {
    status: 409,
    title: "No certificate can be claimed for this purchase",
    meaning: "No voucher: `reason` is not_settled, certificate_disabled, already_minted or mint_pending.",
  },
  member_exists: {
    status: 409,
    title: "This wallet is already a member",
    meaning: "The wallet is already a console member of this partner.",
  },
  member_limit_reached: {
    status: 409,
    title: "Too many members",
    meaning: "The partner already has the most console members allowed (100); remove one first.",
  },
  too_many_webhook_endpoints: {
    status: 409,
    title: "Too many webhook endpoints",
    meaning: "The partner already has the most webhook endpoints allowed; delete one first.",
  },
  no_webhook_endpoint: {
    status: 409,
    title: "No endpoint to deliver to",
    meaning: "Redelivery: none of the partner's webhook endpoints subscribes to the event's type (or the named one does not).",
  },
  concurrent_rotation: {
    status: 409,
    title: "The secret was rotated concurrently",
    meaning: "Two rotations of one endpoint's secret raced; read the endpoint and try again.",
  },
  issuer_exists: {
    status: 409,
    title: "This wallet is already an issuer",
    meaning: "Admin: the wallet is already registered as an issuer.",
  },
  payment_address_taken: {
    status: 409,
    title: "This payment address is already assigned",
    meaning: "Admin: the payment address already belongs to a partner.",
  },
  settlement_address_taken: {
    status: 409,
    title: "The settlement address belongs to another partner",
    meaning: "RWA: an offering's settlement address is a payment address of another partner.",
  },
  invalid_offering_state: {
    status: 409,
    title: "The offering is not in a state that allows this",
    meaning:
      "RWA: the offering's lifecycle state does not allow this action (e.g. editing an open offering, resuming an admin pause).",
  },
  offering_not_open: {
    status: 409,
    title: "The offering is not open for purchases",
    meaning: "RWA: the offering is a draft, in review, rejected or closed.",
  },
  offering_paused: {
    status: 409,
    title: "The offering is not open for purchases",
    meaning: "RWA: the issuer or an admin paused the offering.",
  },
  offering_not_open_yet: {
    status: 409,
    title: "The offering is not open yet",
    meaning: "RWA: the offering's `opensAt` is still ahead.",
  },
  insufficient_units: {
    status: 409,
    title: "Not enough units are available",
    meaning: "RWA: fewer units are available than asked for.",
  },
  investor_limit_exceeded: {
    status: 409,
    title: "This would exceed the per-investor limit",
    meaning: "RWA: the purchase would take the investor over the offering's `maxUnitsPerInvestor`, counting reserved units.",
  },
  too_many_open_purchases: {
    status: 409,
    title: "Too many unpaid purchases in this offering",
    meaning: "RWA: the wallet already holds the most unpaid purchases of one offering allowed; pay one or let it expire.",
  },
  unverified_hold_limit: {
    status: 409,
    title: "Unverified wallets already hold their share of this offering",
    meaning: "RWA: wallets without approved KYC together hold the most unpaid units they may; complete KYC or retry later.",
  },
  purchase_not_payable: {
    status: 409,
    title: "This purchase cannot be paid",
    meaning: "RWA: the purchase has no checkout session to pay; start a new purchase.",
  },
  recipient_mismatch: {
    status: 409,
    title: "The certificate goes to the recipient chosen at checkout",
    meaning: "RWA: a certificate claim for another wallet than the purchase's recipient.",
  },
  authorization_used: {
    status: 409,
    title: "The authorization cannot pay this checkout",
    meaning: "The token reports this authorization's nonce as already used or cancelled (`authorizationState`).",
  },
  authorization_already_submitted: {
    status: 409,
    title: "The authorization cannot pay this checkout",
    meaning: "This authorization (payer and nonce) was already submitted, to this or another session.",
  },
  authorization_in_progress: {
    status: 409,
    title: "The authorization cannot pay this checkout",
    meaning: "Another gasless payment of this session is queued, submitted or mined.",
  },
  // 410
  session_expired: {
    status: 410,
    title: "The checkout session has expired",
    meaning: "The session expired; create a new session for the same order.",
  },
  // 413, 415
  payload_too_large: {
    status: 413,
    title: "The request body is too large",
    meaning: "The body is over the route's limit (16 KiB on public and sign-in routes, 1 MiB elsewhere by default).",
  },
  logo_too_large: { status: 413, title: "The logo is too large", meaning: "A branding logo is larger than 64 KiB." },
  unsupported_logo_type: {
    status: 415,
    title: "The logo must be a PNG or an SVG",
    meaning: "A branding logo is neither image/png nor image/svg+xml.",
  },
  // 422: a submitted transaction hash that does not pay the session
  wrong_amount: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning: "The transfer is not the exact displayed amount.",
  },
  late: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning: "The transfer was mined after the session expired.",
  },
  predates_session: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning:
      "The transfer was mined before the session existed: its block is stamped more than 5 s before the second the session was created in.",
  },
  wrong_token: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning: "The transaction moved a token other than canonical USDC.",
  },
  wrong_recipient: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning: "USDC went to another address than the displayed one.",
  },
  wrong_network: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning: "The transaction is on another network.",
  },
  wrong_payer: {
    status: [422, 409],
    title: "The transaction does not pay this checkout",
    meaning:
      "RWA: the transfer did not come from the investor's wallet (422 on a submitted hash; 409 when such a payment is attached to the purchase by hand).",
  },
  reverted: { status: 422, title: "The transaction does not pay this checkout", meaning: "The transaction failed on chain." },
  replay: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning: "The transfer was already credited to another payment.",
  },
  duplicate_payment: {
    status: 422,
    title: "The transaction does not pay this checkout",
    meaning:
      "The order was already paid (or is being confirmed) by another transfer; this one is recorded as unresolved for a refund.",
  },
  // 422: other requests the service cannot carry out as asked
  unsupported_network: {
    status: 422,
    title: "This network is not enabled",
    meaning: "The network is not enabled on this service.",
  },
  unsupported_chain: {
    status: 422,
    title: "This chain is not enabled",
    meaning: "Portal sign-in: a challenge asked for a chain id this service does not enable.",
  },
  no_payment_address: {
    status: 422,
    title: "No payment address on this network",
    meaning: "The partner has no watched payment address on that network.",
  },
  settlement_address_not_watched: {
    status: 422,
    title: "The settlement address is not watched on this network",
    meaning: "RWA: the offering's settlement address is not one the indexer watches on its network.",
  },
  // 422: gasless payment (EIP-3009 authorizations relayed by the service, see docs/gasless.md)
  authorization_wrong_recipient: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The authorization's `to` is not this session's payment address.",
  },
  authorization_wrong_amount: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The authorization's `value` is not the exact displayed amount.",
  },
  authorization_outlives_session: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The authorization's `validBefore` is after the session's expiry.",
  },
  authorization_expired: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "`validBefore` has passed on chain, or is under 20 s away: too late to be mined.",
  },
  authorization_not_yet_valid: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "`validAfter` is not yet past on chain.",
  },
  authorization_wrong_network: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The wallet signed for another chain than the session's.",
  },
  authorization_wrong_token: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The wallet signed for another token than the session's USDC.",
  },
  authorization_wrong_payer: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "RWA: `from` is not the signed-in investor's wallet.",
  },
  authorization_bad_signature: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The signature is not `from`'s (EOA or EIP-1271) over this authorization and the token's EIP-712 domain.",
  },
  authorization_insufficient_balance: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "The payer holds less USDC than the amount.",
  },
  authorization_rejected_on_chain: {
    status: 422,
    title: "The authorization cannot pay this checkout",
    meaning: "Simulating `transferWithAuthorization` reverted; nothing was sent.",
  },
  // 429
  rate_limited: {
    status: 429,
    title: "Too many requests",
    meaning: "Too many requests from this client (or unknown-hash look-ups for one checkout); wait for `Retry-After` seconds.",
  },
  // 500
  internal_error: {
    status: 500,
    title: "Internal error",
    meaning: "Our fault; the response carries a requestId to quote.",
  },
  // 503
  store_unavailable: {
    status: 503,
    title: "The service's store is not answering",
    meaning:
      "The store is locked by another process or unreachable for longer than its bounded wait; nothing changed. Retry after `Retry-After` seconds.",
  },
  rpc_unavailable: {
    status: 503,
    title: "The chain node is not answering",
    meaning:
      "The chain node did not answer in time (timeout, refused, 502/503/504); nothing changed. Retry after `Retry-After` seconds.",
  },
  index_not_ready: {
    status: 503,
    title: "The index is not ready",
    meaning:
      "The indexer is restarting or backfilling and could not answer this read in time; nothing changed, and a payment made meanwhile is settled once the index reaches it. Retry after `Retry-After` seconds.",
  },
  reference_space_exhausted: {
    status: 503,
    title: "No payment reference is free for this amount",
    meaning: "Every sub-cent offset of this total is taken; add a payment address.",
  },
  voucher_key_missing: {
    status: 503,
    title: "Certificates are not configured",
    meaning: "The service has no voucher key configured.",
  },
  signature_check_unavailable: {
    status: 503,
    title: "The signature could not be checked",
    meaning:
      "Portal sign-in or a reward funding proof: the chain node did not answer the (EIP-1271/6492) signature check; try again.",
  },
  portal_domain_not_configured: {
    status: 503,
    title: "Portal sign-in is not configured",
    meaning: "`PUBLIC_BASE_URL` is not set, so sign-in messages cannot name the service's domain.",
  },
  relayer_out_of_funds: {
    status: 503,
    title: "The authorization cannot pay this checkout",
    meaning: "The network's relayer cannot pay the gas; nothing was sent, the failure shows on the session.",
  },
  relay_failed: {
    status: 503,
    title: "The authorization cannot pay this checkout",
    meaning: "The relayer could not send the transaction; the failure shows on the session.",
  },
  gasless_unavailable: {
    status: 503,
    title: "The authorization cannot pay this checkout",
    meaning: "No relayer is configured on the session's network (`<NET>_RELAYER_KEY_FILE`); pay by plain transfer.",
  },
  // Rewards (docs/rewards.md)
  invalid_funding_address: {
    status: 400,
    title: "This funding address cannot pay rewards",
    meaning: "`PUT /v1/rewards/settings`: the funding address is the zero address or the token itself.",
  },
  invalid_funding_proof: {
    status: 400,
    title: "The funding address is not proven",
    meaning:
      "`PUT /v1/rewards/settings`: a new funding address needs the challenge of `POST /v1/rewards/settings/funding-challenge` signed by it; `reason` is missing, unknown_challenge, challenge_used, challenge_expired, message_altered, wrong_address, wrong_chain, invalid_signature or no_funding_address.",
  },
  funding_address_taken: {
    status: 409,
    title: "This funding address is another partner's",
    meaning:
      "`PUT /v1/rewards/settings`: another partner has proven this funding address; one funding address pays one partner only.",
  },
  rewards_not_configured: {
    status: 409,
    title: "Rewards are not set up",
    meaning:
      "The partner has no proven funding address (`PUT /v1/rewards/settings` with its proof; an address set before proofs existed must be proven again); no reward can be granted or claimed.",
  },
  reward_order_not_settled: {
    status: 409,
    title: "This order cannot be rewarded",
    meaning: "Rewards are granted on settled orders only.",
  },
  reward_exceeds_amount_paid: {
    status: 409,
    title: "The rewards would exceed the amount paid",
    meaning: "The order's rewards (revoked and expired ones aside) plus this one would exceed the order's `amountPaid`.",
  },
  reward_not_claimable: {
    status: 409,
    title: "This reward cannot be claimed",
    meaning:
      "No voucher: `reason` is revoked, expired, claimed, claim_pending (its claim is being confirmed) or voucher_out (a voucher for another wallet is out until `retryAfter`).",
  },
  reward_not_revocable: {
    status: 409,
    title: "This reward cannot be revoked",
    meaning:
      "`reason` is claimed or claim_pending (paid or being paid), voucher_out (a voucher is out until its deadline: revoke after `retryAfter`), revoked or expired.",
  },
  reward_unfunded: {
    status: 409,
    title: "The partner's funding cannot cover this reward",
    meaning:
      "The funding address's allowance to the distributor or its balance is below this reward plus its other vouchers still out (read at most 10 s ago); no voucher was issued.",
  },
  rewards_unavailable: {
    status: 503,
    title: "Rewards are not offered on this network",
    meaning:
      "The order's network has no reward distributor (`<NET>_REWARD_DISTRIBUTOR_ADDRESS`), or the service has no voucher key.",
  },
  // Issue 24 (second attack review): attach re-checks, relayer limits, test payments.
  offering_sold_out: {
    status: 409,
    title: "The offering no longer has the units this payment was for",
    meaning:
      "RWA: a late payment attached to a purchase whose reservation was released, and the offering has too few units left to reserve them again; mark the payment for refund.",
  },
  investor_not_eligible: {
    status: 403,
    title: "The investor may no longer buy into this offering",
    meaning:
      "RWA: a payment attached by hand to a purchase whose investor fails the offering's rules now (frozen, KYC, jurisdiction, accreditation; `reasons`); mark the payment for refund.",
  },
  relay_amount_too_small: {
    status: 422,
    title: "The amount is too small to pay without gas",
    meaning: "Gasless payment: the amount is under the relayer's minimum (`RELAYER_MIN_AMOUNT`); pay by plain transfer.",
  },
  relay_session_limit: {
    status: 409,
    title: "This checkout cannot be paid without gas any more",
    meaning:
      "Gasless payment: the relayer already sent the most transactions it sends for one checkout (`RELAYER_SESSION_RELAYS`); pay by plain transfer.",
  },
  relay_quota_exceeded: {
    status: 429,
    title: "The relayer's daily quota for this shop is used up",
    meaning:
      "Relayer: it sent the most transactions it sends for one partner today on this network (`RELAYER_PARTNER_DAILY_RELAYS`); retry after `Retry-After` seconds (the next UTC day) or pay by plain transfer.",
  },
  relay_budget_spent: {
    status: 429,
    title: "The relayer's daily gas budget for this shop is spent",
    meaning:
      "Relayer: the gas it spent for one partner today on this network reached `RELAYER_PARTNER_DAILY_GAS_WEI`; retry after `Retry-After` seconds (the next UTC day) or pay by plain transfer.",
  },
  test_payment_refused: {
    status: 422,
    title: "The test account cannot send this payment",
    meaning:
      "Local mode: the test account holds less test USDC than the amount asked for (or the chain refused the transfer); nothing was sent.",
  },
  // Refunds (SPEC 15, docs/refunds.md)
  refund_exceeds_remaining: {
    status: 409,
    title: "The refund is more than remains refundable",
    meaning:
      "The amount (or, without one, nothing at all) is more than what was paid minus the order's or payment's live refunds; `remaining` says what is left. Nothing was created.",
  },
  order_not_paid: {
    status: 409,
    title: "The order is not paid",
    meaning: "Only an order credited by a payment can be refunded; refund a payment that matched no order by its key.",
  },
  payment_not_refundable: {
    status: 409,
    title: "This payment cannot be refunded",
    meaning:
      "The payment is still confirming or was reorged off the chain: only a credited or an unresolved payment can be refunded.",
  },
  destination_is_zero_address: {
    status: 422,
    title: "The refund cannot go to the zero address",
    meaning: "The zero address burns what it receives; name the wallet that should receive the refund.",
  },
  destination_is_token: {
    status: 422,
    title: "The refund cannot go to the token contract",
    meaning: "USDC sent to the USDC contract itself is lost; name the wallet that should receive the refund.",
  },
  destination_is_payment_address: {
    status: 422,
    title: "The refund cannot go to a payment address",
    meaning:
      "The address is a payment address of a partner of this service: money sent there would be taken for an incoming payment, not a refund.",
  },
  destination_is_service_address: {
    status: 422,
    title: "The refund cannot go to an address of the service",
    meaning:
      "The address is one of this service's own, on some network: a relayer, the certificate contract or the reward distributor. Nobody would ever send money on from there; name the wallet that should receive the refund.",
  },
  refund_not_cancellable: {
    status: 409,
    title: "The refund can no longer be cancelled",
    meaning: "Its transfer was already seen (`pending`) or it succeeded: money left the payment address.",
  },
  invalid_refund_token: {
    status: 401,
    title: "The refund token is not valid for this refund",
    meaning: "The customer's refund token does not belong to this refund (or was replaced by a newer link).",
  },
  refund_destination_locked: {
    status: 409,
    title: "The refund's receiving address can no longer be set",
    meaning:
      "The receiving address was already set (the refund is `ready` or later) or the refund was cancelled; a destination is never changed once set.",
  },
  // Subscriptions (issue 44, docs/subscriptions.md)
  subscriptions_unavailable: {
    status: 503,
    title: "Subscriptions are not available on this network",
    meaning:
      "No subscription manager is configured on the network (`<NET>_SUBSCRIPTION_MANAGER_ADDRESS`), or no relayer to submit the customer's signature. Nothing was created or sent.",
  },
  invalid_subscription_token: {
    status: 401,
    title: "The client token is not valid for this subscription",
    meaning:
      "The customer's client token does not belong to this subscription (or was replaced by a newer link, when the creation was replayed).",
  },
  subscription_not_awaiting_authorization: {
    status: 409,
    title: "The subscription is not waiting for the customer's signature",
    meaning:
      "Terms are issued and signatures relayed only while the subscription is `awaiting_authorization`; `subscriptionStatus` says what it is. Nothing was sent.",
  },
  subscription_terms_not_issued: {
    status: 409,
    title: "No terms were issued for this subscription",
    meaning: "Ask for the terms first (`POST /v1/public/subscriptions/{id}/terms`); the signature must be over exactly them.",
  },
  subscription_bad_signature: {
    status: 422,
    title: "The signature does not authorise these terms",
    meaning:
      "The signature is not the subscriber's over exactly the terms the service issued last: another payee, amount, token, period, window, salt or subscriber is another message. Nothing was sent.",
  },
  subscription_permit_expired: {
    status: 422,
    title: "The permit's deadline has passed",
    meaning: "The EIP-2612 permit's deadline is not after the chain's latest block: ask for new terms and sign again.",
  },
  subscription_rejected_on_chain: {
    status: 422,
    title: "The subscription manager refuses this registration",
    meaning:
      "Simulating `subscribe` (or `subscribeWithPermit`) reverts: the terms are already registered, their `end` has passed, or the permit does not apply. Nothing was sent.",
  },
  subscription_not_cancellable: {
    status: 409,
    title: "The subscription cannot be cancelled",
    meaning: "It already ended, expired or was cancelled; `subscriptionStatus` says which.",
  },
  subscription_cancel_bad_signature: {
    status: 422,
    title: "The signature is not the subscriber's cancel of this subscription",
    meaning:
      "The customer's cancel must be the subscriber's EIP-712 `Cancel(bytes32 id)` over this subscription's on-chain id, as the page's `cancel.typedData` states it. Nothing was sent.",
  },
  subscription_cancel_rejected_on_chain: {
    status: 422,
    title: "The subscription manager refuses this cancel",
    meaning:
      "Simulating `cancelWithSignature` reverts: the terms are not registered yet, or were already cancelled on chain. Nothing was sent.",
  },
  certificate_revoked: {
    status: 409,
    title: "The certificate of this purchase is revoked",
    meaning: "The order was fully refunded: its certificate can no longer be claimed, and a minted one verifies `revoked`.",
  },
  // Refunds: sending them (issue 26, docs/refunds.md "Sending a refund")
  refund_not_ready: {
    status: 409,
    title: "The refund is not ready to be sent",
    meaning:
      "Only a `ready` refund (its destination set, not sent, not cancelled) has a transfer to send or to authorize; `refundStatus` says what it is. Nothing was sent.",
  },
  refund_already_relayed: {
    status: 409,
    title: "The relayer already sent this refund",
    meaning:
      "A refund is relayed once (EIP-3009, no ETH needed): the refund completes when the index shows that transfer. Send it otherwise only after that authorization's `validBefore` has passed. Nothing was sent.",
  },
  refund_already_sent: {
    status: 409,
    title: "The test account already sent this refund",
    meaning:
      "Send with the test account (local and fork mode) sends a refund once, also when several requests arrive together: the refund completes when the index shows that transfer. Nothing more was sent.",
  },
  local_mode_only: {
    status: 404,
    title: "Only in local mode",
    meaning:
      '"Send with the test account" (refunds) and "Approve with the test account" (rewards) exist in local mode only (`npm start`, on the local Anvil or an Anvil fork): elsewhere the service holds no way to move a partner\'s money. Nothing was signed or sent.',
  },
  // Accounting (docs/accounting.md)
  read_only_key: {
    status: 403,
    title: "This key may only read",
    meaning:
      "A read-only key (`rk_…`) or a platform auditor key (`ak_…`) called something other than a GET; writes (a test payment included) need a full key.",
  },
  invalid_range: {
    status: 400,
    title: "The range is not valid",
    meaning:
      "An accounting range that is missing, mixes blocks and times, is reversed, is not numeric or not an ISO 8601 time, or names a chain that is not enabled.",
  },
  range_too_wide: {
    status: 400,
    title: "The range is too wide",
    meaning: "An accounting range wider than the documented maximum (docs/accounting.md); ask for it in several parts.",
  },
  range_not_indexed: {
    status: 400,
    title: "The range is not indexed",
    meaning: "An accounting block range that starts before the indexer's start block or ends after the indexed head.",
  },
  // Closed periods (issue 43, docs/accounting.md "Closed periods")
  period_overlaps: {
    status: 409,
    title: "The period overlaps a closed one",
    meaning:
      "A period to close shares blocks with one of the partner's closed periods on that chain; periods of a partner never overlap.",
  },
  period_not_final: {
    status: 409,
    title: "The period is not final yet",
    meaning:
      "The last block of a period to close does not have the network's confirmations yet (or the period holds no block yet); close it once it has.",
  },
  // RWA refunds by the issuer (issue 26, docs/refunds.md "Issuers")
  purchase_not_paid: {
    status: 409,
    title: "The purchase is not paid",
    meaning:
      "An issuer refunds only a settled RWA purchase; one awaiting payment, confirming or expired has nothing to give back (`purchaseStatus` says which). Nothing was created.",
  },
} as const satisfies Record<string, ProblemDefinition>;

export type ProblemCode = keyof typeof PROBLEM_REGISTRY;

export const PROBLEM_CODES = Object.keys(PROBLEM_REGISTRY) as ProblemCode[];

/** Every status a code is answered with, the usual one first. */
export function problemStatuses(code: ProblemCode): readonly ContentfulStatusCode[] {
  const status: ProblemDefinition["status"] = PROBLEM_REGISTRY[code].status;
  return typeof status === "number" ? [status] : status;
}

/** The catalogue as rows, for `/docs/problems` and docs/errors.md. */
export const PROBLEM_CATALOGUE: {
  code: ProblemCode;
  status: number;
  statuses: readonly number[];
  title: string;
  meaning: string;
}[] = PROBLEM_CODES.map((code) => ({
  code,
  status: problemStatuses(code)[0] as number,
  statuses: problemStatuses(code),
  title: PROBLEM_REGISTRY[code].title,
  meaning: PROBLEM_REGISTRY[code].meaning,
}));
