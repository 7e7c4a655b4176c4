/**
 * The shapes of the options the configuration fills for each part of the service, defined
 * beside the configuration so that it imports no module above it (docs/architecture.md).
 */

/** The webhook dispatcher's retries and concurrency (api/outbox/dispatcher.ts, docs/webhooks.md). */
export type DispatcherOptions = {
  /** First retry waits up to this long; each further retry doubles the ceiling (full jitter). */
  retryBaseMs: number;
  /** Ceiling of one wait between attempts. */
  retryMaxDelayMs: number;
  /** A delivery is retried for at least this long after it was queued, then marked failed. */
  retryWindowMs: number;
  /** One attempt (DNS, connect, send, response) may take this long. */
  attemptTimeoutMs: number;
  /** Attempts in flight at once in one process. */
  concurrency: number;
  /** Attempts in flight at once to one endpoint, across every process (counted from the leases in the store). */
  perEndpointConcurrency: number;
  /** Attempts in flight at once to all endpoints of one partner, across every process. */
  perPartnerConcurrency: number;
  pollIntervalMs: number;
};

/** What the relayer may spend for a partner (api/gasless/relay-charges.ts, docs/gasless.md "Limits"). */
export type RelayLimits = {
  /** The smallest USDC amount (base units) a relayed payment may move. */
  minAmount: bigint;
  /** Transactions per partner, network and UTC day. */
  partnerDailyRelays: number;
  /** Transactions per subject (a checkout session for payments). */
  sessionRelays: number;
  /** Gas (wei) per partner, network and UTC day; a sent transaction counts its maximum cost until mined. */
  partnerDailyGasWei: bigint;
  /** Below this relayer balance (wei), health is `degraded`. */
  balanceFloorWei: bigint;
};

/** Limits every request meets before a handler runs (api/http/request-limits.ts, docs/security.md "Limits"). */
export type RequestLimits = {
  /** Any request body, authenticated or not. */
  bodyBytes: number;
  /** Bodies of routes anyone may call without a credential (browser checkout, sign-in). */
  publicBodyBytes: number;
  /** Sign-in challenges and verifications (`/api/{portal}/auth/*`), per client IP per window. */
  signIn: RateLimit;
  /** Calls that may look a transaction up over RPC (hash submissions, authorizations), per client IP per window. */
  lookups: RateLimit;
  /** Every other public browser call (`/v1/public/*`), per client IP per window. */
  publicCalls: RateLimit;
  trustProxy: boolean;
};

/** Requests per client IP per window, counted in each process. */
export type RateLimit = { limit: number; windowMs: number };

/** The indexer watchdog's timings (api/indexed/indexer-watchdog.ts, docs/operations.md). */
export type WatchdogSettings = {
  /** How long the index may stay behind the node's head without moving before it counts as stalled. */
  stallTimeoutMs: number;
  /** Exit (code 75) on a stall so the process manager restarts the indexer; false: only report. */
  restartOnStall: boolean;
  /** Time between two samples. */
  sampleIntervalMs: number;
  /** Time a node probe may take; a slower node counts as not answering. */
  probeTimeoutMs: number;
  /** Time between the stall's report and the exit, so monitoring sees `degraded` first. */
  restartDelayMs: number;
};

/** Settings of the portals, from the configuration validated at start. */
export type PortalSettings = {
  /** Lifetime of a sign-in challenge (EIP-4361 `Expiration Time`). */
  challengeTtlSeconds: number;
  /** Fixed lifetime of a portal session; it is never extended. */
  sessionTtlSeconds: number;
  /** Public verification: requests per client IP per window. */
  verifyRateLimit: { limit: number; windowMs: number };
  /** How long an investor's purchase holds its units (the checkout session's lifetime). */
  reservationSeconds: number;
  /** After a purchase's session expired, wait this long before its units go back on sale. */
  releaseGraceMs: number;
  /** Take the client IP from the first `X-Forwarded-For` entry (only behind a proxy that sets it). */
  trustProxy: boolean;
};
