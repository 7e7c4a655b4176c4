/** Every stable problem `code` the API answers with, for `/docs` (problem `type` URIs point here). */
export const PROBLEM_CATALOGUE: { code: string; status: number; meaning: string }[] = [
  { code: "invalid_request", status: 400, meaning: "The body, path or query does not validate; `errors` lists each field." },
  {
    code: "invalid_cursor",
    status: 400,
    meaning: "A `cursor` (or `after`) that this service did not issue: malformed, tampered or out of range.",
  },
  { code: "unauthenticated", status: 401, meaning: "Missing, malformed, wrong or revoked API key or portal session." },
  { code: "invalid_client_token", status: 401, meaning: "The client token does not belong to this checkout session." },
  { code: "forbidden", status: 403, meaning: "Authenticated, but this role or owner may not do this." },
  {
    code: "recipient_not_eligible",
    status: 403,
    meaning:
      "RWA: the certificate's recipient fails the offering's rules (`reasons`: wallet_frozen, kyc_required, jurisdiction_…, accreditation_…), at purchase or at voucher issue.",
  },
  {
    code: "not_found",
    status: 404,
    meaning:
      "No such resource (or not yours), or no route at this path under `/v1` or `/api` (a trailing slash is a different path; the detail names the path without it).",
  },
  {
    code: "payment_not_found",
    status: 404,
    meaning: "No transaction with this hash on the session's network (reason `not_found`).",
  },
  {
    code: "method_not_allowed",
    status: 405,
    meaning:
      "The path exists but not with this method; the `Allow` header (and `allow` in the body) lists the methods it accepts.",
  },
  { code: "idempotency_conflict", status: 409, meaning: "The idempotency key was used with a different body." },
  { code: "payment_in_progress", status: 409, meaning: "A payment of this order is waiting for confirmations." },
  {
    code: "order_not_commerce",
    status: 409,
    meaning: "The externalOrderId names an investor's RWA purchase, which the commerce API cannot open, pay or claim.",
  },
  { code: "order_not_rwa", status: 409, meaning: "A purchase's order id is already used by a commerce order." },
  {
    code: "session_not_open",
    status: 409,
    meaning: "The session no longer takes contact or delivery details, or (gasless) a new payment: it is paid or expired.",
  },
  { code: "order_not_settled", status: 409, meaning: "Only a settled order can be fulfilled." },
  { code: "payment_not_unresolved", status: 409, meaning: "Only an unresolved payment can be attached or marked for refund." },
  {
    code: "order_already_settled",
    status: 409,
    meaning: "The order is already paid: mark the extra payment for refund instead.",
  },
  {
    code: "payment_of_another_partner",
    status: 409,
    meaning: "The payment went to another partner's address; it can only be credited to that partner's orders (admins too).",
  },
  { code: "order_already_fulfilled", status: 409, meaning: "The order was fulfilled under another idempotency key." },
  {
    code: "certificate_not_available",
    status: 409,
    meaning: "No voucher: `reason` is not_settled, certificate_disabled, already_minted or mint_pending.",
  },
  { code: "session_expired", status: 410, meaning: "The session expired; create a new session for the same order." },
  { code: "wrong_amount", status: 422, meaning: "The transfer is not the exact displayed amount." },
  { code: "late", status: 422, meaning: "The transfer was mined after the session expired." },
  { code: "predates_session", status: 422, meaning: "The transfer was mined before the session existed." },
  { code: "wrong_token", status: 422, meaning: "The transaction moved a token other than canonical USDC." },
  { code: "wrong_recipient", status: 422, meaning: "USDC went to another address than the displayed one." },
  { code: "wrong_network", status: 422, meaning: "The transaction is on another network." },
  { code: "wrong_payer", status: 422, meaning: "RWA: the transfer did not come from the investor's wallet." },
  { code: "reverted", status: 422, meaning: "The transaction failed on chain." },
  { code: "replay", status: 422, meaning: "The transfer was already credited to another payment." },
  {
    code: "duplicate_payment",
    status: 422,
    meaning:
      "The order was already paid (or is being confirmed) by another transfer; this one is recorded as unresolved for a refund.",
  },
  { code: "unsupported_network", status: 422, meaning: "The network is not enabled on this service." },
  { code: "no_payment_address", status: 422, meaning: "The partner has no watched payment address on that network." },
  { code: "logo_too_large", status: 413, meaning: "A branding logo is larger than 64 KiB." },
  { code: "unsupported_logo_type", status: 415, meaning: "A branding logo is neither image/png nor image/svg+xml." },
  {
    code: "payload_too_large",
    status: 413,
    meaning: "The body is over the route's limit (16 KiB on public and sign-in routes, 1 MiB elsewhere by default).",
  },
  {
    code: "rate_limited",
    status: 429,
    meaning: "Too many requests from this client (or unknown-hash look-ups for one checkout); wait for `Retry-After` seconds.",
  },
  {
    code: "reference_space_exhausted",
    status: 503,
    meaning: "Every sub-cent offset of this total is taken; add a payment address.",
  },
  { code: "member_exists", status: 409, meaning: "The wallet is already a console member of this partner." },
  {
    code: "member_limit_reached",
    status: 409,
    meaning: "The partner already has the most console members allowed (100); remove one first.",
  },
  { code: "voucher_key_missing", status: 503, meaning: "The service has no voucher key configured." },
  {
    code: "store_unavailable",
    status: 503,
    meaning:
      "The store is locked by another process or unreachable for longer than its bounded wait; nothing changed. Retry after `Retry-After` seconds.",
  },
  {
    code: "rpc_unavailable",
    status: 503,
    meaning:
      "The chain node did not answer in time (timeout, refused, 502/503/504); nothing changed. Retry after `Retry-After` seconds.",
  },
  // Gasless payment (EIP-3009 authorizations relayed by the service, SPEC section 14).
  {
    code: "authorization_wrong_recipient",
    status: 422,
    meaning: "The authorization's `to` is not this session's payment address.",
  },
  { code: "authorization_wrong_amount", status: 422, meaning: "The authorization's `value` is not the exact displayed amount." },
  {
    code: "authorization_outlives_session",
    status: 422,
    meaning: "The authorization's `validBefore` is after the session's expiry.",
  },
  {
    code: "authorization_expired",
    status: 422,
    meaning: "`validBefore` has passed on chain, or is under 20 s away: too late to be mined.",
  },
  { code: "authorization_not_yet_valid", status: 422, meaning: "`validAfter` is not yet past on chain." },
  { code: "authorization_wrong_network", status: 422, meaning: "The wallet signed for another chain than the session's." },
  { code: "authorization_wrong_token", status: 422, meaning: "The wallet signed for another token than the session's USDC." },
  { code: "authorization_wrong_payer", status: 422, meaning: "RWA: `from` is not the signed-in investor's wallet." },
  {
    code: "authorization_bad_signature",
    status: 422,
    meaning: "The signature is not `from`'s (EOA or EIP-1271) over this authorization and the token's EIP-712 domain.",
  },
  { code: "authorization_insufficient_balance", status: 422, meaning: "The payer holds less USDC than the amount." },
  {
    code: "authorization_used",
    status: 409,
    meaning: "The token reports this authorization's nonce as already used or cancelled (`authorizationState`).",
  },
  {
    code: "authorization_already_submitted",
    status: 409,
    meaning: "This authorization (payer and nonce) was already submitted, to this or another session.",
  },
  {
    code: "authorization_in_progress",
    status: 409,
    meaning: "Another gasless payment of this session is queued, submitted or mined.",
  },
  {
    code: "authorization_rejected_on_chain",
    status: 422,
    meaning: "Simulating `transferWithAuthorization` reverted; nothing was sent.",
  },
  {
    code: "relayer_out_of_funds",
    status: 503,
    meaning: "The network's relayer cannot pay the gas; nothing was sent, the failure shows on the session.",
  },
  { code: "relay_failed", status: 503, meaning: "The relayer could not send the transaction; the failure shows on the session." },
  {
    code: "gasless_unavailable",
    status: 503,
    meaning: "No relayer is configured on the session's network (`<NET>_RELAYER_KEY_FILE`); pay by plain transfer.",
  },
  { code: "internal_error", status: 500, meaning: "Our fault; the response carries a requestId to quote." },
];
