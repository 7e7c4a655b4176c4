import { isAddress } from "viem";
import { z } from "zod";

/**
 * Every environment variable the service, `ponder.config.ts`, the workers and the
 * operator CLI read, declared once (docs/deploy.md). `config.ts` validates the
 * environment against these declarations at start and `docs/configuration.md` is
 * generated from them (`npm run docs:config`), so the documentation cannot drift.
 *
 * An empty value counts as unset. Per-network variables are written `<NET>_NAME`,
 * where `<NET>` is `BASE`, `BASE_SEPOLIA` or `LOCAL`.
 */
export type Variable = {
  group: "networks" | "storage" | "keys" | "service" | "webhooks" | "portals" | "limits" | "indexer" | "local";
  schema: z.ZodType;
  /** One or two sentences for the operator: what it does, its format. */
  description: string;
  /** When it must be set (omitted: optional). */
  required?: string;
  /** The default, as the operator would write it. */
  default?: string;
  /** Its value may hold a credential (a password, an RPC provider's key): never echoed in a problem. */
  sensitive?: true;
};

const address = z.string().refine((value) => isAddress(value, { strict: false }), { message: "not an address" });
const addressList = z
  .string()
  .transform((value) =>
    value
      .split(",")
      .map((item) => item.trim())
      .filter(Boolean),
  )
  .pipe(z.array(address));
const httpUrl = z.url({ protocol: /^https?$/, error: "not an http(s) URL" });
const bool = z.enum(["true", "false"], { error: "must be true or false" });
const integer = (min: number, max: number) =>
  z.coerce
    .number({ error: "not a number" })
    .int({ error: "not a whole number" })
    .min(min, { error: `at least ${min}` })
    .max(max, { error: `at most ${max}` });
const HOUR_MS = 3_600_000;

export const NETWORK_NAMES = ["base", "base-sepolia", "local"] as const;

export const SERVICE_VARIABLES = {
  NETWORKS: {
    group: "networks",
    schema: z
      .string()
      .transform((value) =>
        value
          .split(",")
          .map((name) => name.trim())
          .filter(Boolean),
      )
      .pipe(
        z.array(z.enum(NETWORK_NAMES, { error: `not one of ${NETWORK_NAMES.join(", ")}` })).min(1, { error: "names no network" }),
      ),
    description: "Comma-separated networks to index and settle on: `base`, `base-sepolia`, `local`.",
    default: "local",
  },
  DATA_DIR: {
    group: "storage",
    schema: z.string(),
    description:
      "Directory of the embedded databases: the PGlite index (`<DATA_DIR>/ponder`) unless `DATABASE_URL` is set, and the SQLite store (`<DATA_DIR>/app.sqlite`) unless `STORE_URL` is set.",
    default: "`.data` in the working directory",
  },
  DATABASE_URL: {
    group: "storage",
    schema: z.string().regex(/^postgres(ql)?:\/\//, { error: "not a postgres:// URL" }),
    sensitive: true,
    description:
      "Postgres for Ponder's index instead of embedded PGlite (Ponder's own setting). Required for API replicas (`ponder serve`). Give the index a database of its own.",
  },
  DATABASE_SCHEMA: {
    group: "storage",
    schema: z.string().regex(/^[a-z_][a-z0-9_]*$/, { error: "not a plain schema name" }),
    description:
      "The Postgres schema of the index (Ponder's own setting, same as `--schema`). In a fleet the indexer writes a schema of its build (`--schema settlement_v2 --views-schema settlement`) and the API replicas read the stable views schema (`ponder serve --schema settlement`); give it on the command line, not in a shared environment file (docs/deploy.md).",
    default: "public",
  },
  STORE_URL: {
    group: "storage",
    schema: z
      .string()
      .regex(/^(postgres(ql)?:\/\/|pglite:)/, { error: "must be postgres://…, postgresql://… or pglite:<directory>" }),
    sensitive: true,
    description:
      "The service's own state (partners, sessions, payments, events, audit log): `postgres://…` (several processes), `pglite:<directory>` (embedded Postgres, one process) or unset for the SQLite file `<DATA_DIR>/app.sqlite`.",
  },
  STORE_POOL_SIZE: {
    group: "storage",
    schema: integer(1, 500),
    description:
      "Connections each process keeps open to a Postgres store (`STORE_URL=postgres://…`). An API replica answers its hot paths (the customer's status poll, hash submission, a partner's look-ups) in one to three store queries each, so requests in flight beyond the pool wait for a connection; count every process of the fleet against the server's `max_connections`. Ignored for SQLite and `pglite:`.",
    default: "10",
  },
  EMBEDDED_TRIAL: {
    group: "storage",
    schema: bool,
    description:
      "`true` lets a `base` or `base-sepolia` service run on the embedded index (PGlite) and store (SQLite or `pglite:`) for a trial on one machine. Without it the production profile refuses to start unless DATABASE_URL and STORE_URL name Postgres servers: Ponder calls PGlite fit for local development only, and a fleet shares one Postgres.",
    default: "false",
  },
  PUBLIC_BASE_URL: {
    group: "service",
    schema: httpUrl,
    description:
      "The service's public origin, e.g. `https://pay.example.com`: hosted checkout links and the domain wallets sign in to (SIWE) are built from it.",
    required: "unless `LOCAL_MODE=true` (then taken from each request)",
  },
  LOCAL_MODE: {
    group: "service",
    schema: bool,
    description:
      "`true` for development only: allows http and loopback webhook URLs, test payments, and a generated secrets key. `npm start` sets it.",
    default: "false",
  },
  ADMIN_ADDRESSES: {
    group: "service",
    schema: addressList,
    description: "Comma-separated wallets that may sign in to the compliance admin portal.",
    default: "none",
  },
  WORKERS: {
    group: "service",
    schema: z.enum(["on", "off"], { error: "must be on or off" }),
    description:
      "`off` runs no background worker (settlement, mint confirmer, webhook dispatcher, reservations) in this process. With the store on Postgres, only the process holding the workers' lease runs them (the others stand by), so leaving them on in every replica is safe.",
    default: "on",
  },
  VOUCHER_KEY_FILE: {
    group: "keys",
    schema: z.string(),
    description:
      "File holding the private key that signs certificate and reward vouchers (EIP-712): 64 hex digits, with or without `0x`. Its address must be the voucher signer of the certificate contract and of the reward distributor.",
    required:
      "when a network has a certificate contract (`<NET>_CERTIFICATE_ADDRESS`) or a reward distributor (`<NET>_REWARD_DISTRIBUTOR_ADDRESS`)",
  },
  SECRETS_KEY_FILE: {
    group: "keys",
    schema: z.string(),
    description:
      "File holding the 32-byte key that encrypts webhook signing secrets at rest: 64 hex digits, with or without `0x` (`npx settlement secrets generate` writes one). Keep it: without it stored secrets cannot be read.",
    required: "unless `LOCAL_MODE=true` (then generated in `<DATA_DIR>/secrets.key`)",
  },
  WORKER_SAFETY_POLL_MS: {
    group: "service",
    schema: integer(100, HOUR_MS),
    description:
      "With the index on Postgres (`DATABASE_URL`), the settlement, refund, mint and reward workers are woken by the index's notifications; this is how often they still look without one, in case one was lost. Without a listening session (PGlite, or while it reconnects) they poll every 20–200 ms as before.",
    default: "1000",
  },
  WORKERS_STOP_GRACE_MS: {
    group: "service",
    schema: integer(0, 60_000),
    description:
      "On SIGTERM or SIGINT, workers claim nothing new and their work under way (a webhook attempt, a settlement pass) gets this long to end before leases are released and the process exits; keep it below your process manager's kill timeout.",
    default: "4000",
  },
  WEBHOOK_RETRY_BASE_MS: {
    group: "webhooks",
    schema: integer(1, 24 * HOUR_MS),
    description: "First retry of a failed delivery waits up to this long; each further retry doubles the ceiling (full jitter).",
    default: "10000",
  },
  WEBHOOK_RETRY_MAX_DELAY_MS: {
    group: "webhooks",
    schema: integer(1, 7 * 24 * HOUR_MS),
    description: "Ceiling of one wait between delivery attempts.",
    default: "3600000",
  },
  WEBHOOK_RETRY_WINDOW_MS: {
    group: "webhooks",
    schema: integer(0, 30 * 24 * HOUR_MS),
    description: "A delivery is retried for at least this long after it was queued, then marked failed.",
    default: "259200000 (3 days)",
  },
  WEBHOOK_ATTEMPT_TIMEOUT_MS: {
    group: "webhooks",
    schema: integer(100, 60_000),
    description: "One delivery attempt (DNS, connect, send, response) may take this long; a receiver should acknowledge at once.",
    default: "5000",
  },
  WEBHOOK_CONCURRENCY: {
    group: "webhooks",
    schema: integer(1, 1000),
    description: "Delivery attempts in flight at once in one process.",
    default: "32",
  },
  WEBHOOK_ENDPOINT_CONCURRENCY: {
    group: "webhooks",
    schema: integer(1, 1000),
    description: "Delivery attempts in flight at once to one endpoint (at most `WEBHOOK_PARTNER_CONCURRENCY`).",
    default: "4",
  },
  WEBHOOK_PARTNER_CONCURRENCY: {
    group: "webhooks",
    schema: integer(1, 1000),
    description: "Delivery attempts in flight at once to one partner's endpoints.",
    default: "8",
  },
  SIWE_CHALLENGE_TTL_SECONDS: {
    group: "portals",
    schema: integer(1, 600),
    description: "Lifetime of a portal sign-in challenge (EIP-4361 `Expiration Time`).",
    default: "300",
  },
  PORTAL_SESSION_TTL_SECONDS: {
    group: "portals",
    schema: integer(60, 24 * 3600),
    description: "Fixed lifetime of a portal session; it is never extended.",
    default: "28800",
  },
  VERIFY_RATE_LIMIT: {
    group: "portals",
    schema: integer(1, 100_000),
    description: "Public certificate verification: requests per client IP per window.",
    default: "60",
  },
  VERIFY_RATE_WINDOW_SECONDS: {
    group: "portals",
    schema: integer(1, 3600),
    description: "The window of `VERIFY_RATE_LIMIT`.",
    default: "60",
  },
  RWA_RESERVATION_SECONDS: {
    group: "portals",
    schema: integer(5, 86_400),
    description: "How long an investor's purchase holds its units (its checkout session's lifetime).",
    default: "1800",
  },
  RWA_RELEASE_GRACE_SECONDS: {
    group: "portals",
    schema: integer(0, 86_400),
    description: "After a purchase's session expired, wait this long before its units go back on sale.",
    default: "600",
  },
  TRUST_PROXY: {
    group: "portals",
    schema: bool,
    description: "Take the client IP from the first `X-Forwarded-For` entry; only behind a proxy that sets it.",
    default: "false",
  },
  BODY_LIMIT_BYTES: {
    group: "limits",
    schema: integer(1024, 64 * 1024 * 1024),
    description: "Largest request body, authenticated or not (`413 payload_too_large` above it).",
    default: "1048576",
  },
  PUBLIC_BODY_LIMIT_BYTES: {
    group: "limits",
    schema: integer(1024, 1024 * 1024),
    description:
      "Largest body of a route anyone may call without a credential (browser checkout, sign-in); at most `BODY_LIMIT_BYTES`.",
    default: "16384",
  },
  SIGN_IN_RATE_LIMIT: {
    group: "limits",
    schema: integer(1, 1_000_000),
    description: "Sign-in challenges and verifications per client IP per window (counted per API replica).",
    default: "120",
  },
  LOOKUP_RATE_LIMIT: {
    group: "limits",
    schema: integer(1, 1_000_000),
    description:
      "Calls that may look a transaction up over RPC (hash submissions, authorizations) per client IP per window (counted per API replica).",
    default: "120",
  },
  PUBLIC_RATE_LIMIT: {
    group: "limits",
    schema: integer(1, 1_000_000),
    description: "Other public browser calls (`/v1/public/*`) per client IP per window (counted per API replica).",
    default: "1200",
  },
  RATE_LIMIT_WINDOW_SECONDS: {
    group: "limits",
    schema: integer(1, 3600),
    description: "The window of the three rate limits above.",
    default: "60",
  },
  RELAYER_REPLACE_AFTER_SECONDS: {
    group: "keys",
    schema: integer(1, 3600),
    description: "Gasless payment: a relayed transaction still unmined after this long is replaced with a higher fee.",
    default: "30",
  },
  RELAYER_LOW_BALANCE_WEI: {
    group: "keys",
    schema: z.string().regex(/^\d{1,30}$/, { error: "a whole number of wei" }),
    description: "Gasless payment: health warns when a relayer holds less ETH than this (wei).",
    default: "2000000000000000",
  },
  RELAYER_MIN_AMOUNT: {
    group: "keys",
    schema: z.string().regex(/^\d{1,30}$/, { error: "a whole number of USDC base units" }),
    description:
      "Gasless payment: the smallest amount (USDC base units) the relayer submits; a smaller authorization is refused with `relay_amount_too_small` and costs no gas.",
    default: "100000",
  },
  RELAYER_PARTNER_DAILY_RELAYS: {
    group: "keys",
    schema: integer(0, 10_000_000),
    description:
      "Relayer: transactions it sends for one partner per UTC day and network (payments, and later refunds and reward claims); then `429 relay_quota_exceeded` until the next day.",
    default: "2000",
  },
  RELAYER_SESSION_RELAYS: {
    group: "keys",
    schema: integer(1, 100),
    description:
      "Relayer: transactions it sends for one checkout session (failed relays free the session for another try); then `409 relay_session_limit`.",
    default: "3",
  },
  RELAYER_PARTNER_DAILY_GAS_WEI: {
    group: "keys",
    schema: z.string().regex(/^\d{1,30}$/, { error: "a whole number of wei" }),
    description:
      "Relayer: gas (wei) it spends for one partner per UTC day and network, counting a sent transaction's maximum cost until it is mined; then `429 relay_budget_spent` with `Retry-After`.",
    default: "50000000000000000",
  },
  RELAYER_BALANCE_FLOOR_WEI: {
    group: "keys",
    schema: z.string().regex(/^\d{1,30}$/, { error: "a whole number of wei" }),
    description:
      "Relayer: below this balance (wei) health answers `degraded` (reason `relayer_balance_low`); between it and `RELAYER_LOW_BALANCE_WEI` health only warns.",
    default: "200000000000000",
  },
  INDEXER_STALL_TIMEOUT_MS: {
    group: "indexer",
    schema: integer(1_000, Number.MAX_SAFE_INTEGER),
    description: "How long the index may stay behind an answering node's head without moving before it counts as stalled.",
    default: "120000",
  },
  INDEXER_STALL_RESTART: {
    group: "indexer",
    schema: bool,
    description:
      "`true`: a stalled indexer exits with code 75 so its process manager starts it again; `false`: health only reports it.",
    default: "true",
  },
  INDEXER_RPC_TRANSPORT: {
    group: "indexer",
    schema: z.enum(["bounded", "ponder"], { error: "must be bounded or ponder" }),
    description:
      "`bounded`: the indexer's own transport, which waits out a node that stops answering; `ponder`: Ponder's transport (an escape hatch).",
    default: "bounded",
  },
} satisfies Record<string, Variable>;

/** Read as `<NET>_<name>`, e.g. `BASE_RPC_URL`. */
export const NETWORK_VARIABLES = {
  RPC_URL: {
    group: "networks",
    schema: httpUrl,
    sensitive: true,
    description:
      "An HTTP(S) JSON-RPC endpoint of that network. Its `eth_chainId` is checked at start (8453 Base, 84532 Base Sepolia).",
    required: "for every network in `NETWORKS` (`local`: written by `npm start`)",
  },
  WS_URL: {
    group: "networks",
    schema: z.url({ protocol: /^wss?$/, error: "not a ws:// or wss:// URL" }),
    sensitive: true,
    description:
      "A `wss://` endpoint of the same node: new blocks arrive by subscription instead of polling (up to a polling interval sooner).",
  },
  USDC_ADDRESS: {
    group: "networks",
    schema: address,
    description: "Override of the canonical USDC (`0x8335…2913` on Base, `0x036C…CF7e` on Base Sepolia).",
    default: "Circle's USDC on that network",
  },
  CERTIFICATE_ADDRESS: {
    group: "networks",
    schema: address,
    description: "The deployed certificate contract, if certificates are offered (then `VOUCHER_KEY_FILE` is required).",
  },
  REWARD_DISTRIBUTOR_ADDRESS: {
    group: "networks",
    schema: address,
    description:
      "The deployed `RewardDistributor`, if rewards are offered (then `VOUCHER_KEY_FILE` is required; its address must be the distributor's voucher signer). Partners approve it from their funding address.",
  },
  SUBSCRIPTION_MANAGER_ADDRESS: {
    group: "networks",
    schema: address,
    description:
      "The deployed `SubscriptionManager`, if subscriptions are offered (`npx settlement contracts deploy` prints it). It trusts no key of the service: customers' signed terms are its only authority.",
  },
  PAYMENT_ADDRESSES: {
    group: "networks",
    schema: addressList,
    description:
      "Comma-separated recipient addresses watched beside those in the store (`npx settlement payment-address add`). The indexer reads both at start.",
  },
  START_BLOCK: {
    group: "networks",
    schema: integer(0, Number.MAX_SAFE_INTEGER),
    description: "First block to index: a block shortly before your payment addresses were first paid.",
    required: "off `local`",
  },
  CONFIRMATIONS: {
    group: "networks",
    schema: integer(1, 1000),
    description: "Confirmations before a payment settles (1 = the block itself).",
    default: "base 10, base-sepolia 3, local 1",
  },
  POLLING_INTERVAL_MS: {
    group: "networks",
    schema: integer(100, 60_000),
    description: "How often the indexer asks for new blocks without a WebSocket (Ponder's minimum is 100).",
    default: "local 100, others 1000",
  },
  RELAYER_KEY_FILE: {
    group: "keys",
    schema: z.string(),
    description:
      "File holding the private key that submits gasless EIP-3009 payments on that network: 64 hex digits, with or without `0x`. Its address must hold ETH for gas.",
  },
} satisfies Record<string, Variable>;

/** Read by `npm start` (the local stack) only; the service never sees them. */
export const LOCAL_STACK_VARIABLES = {
  PORT: { group: "local", schema: integer(0, 65_535), description: "Port of the API.", default: "42069, or a free one" },
  ANVIL_PORT: { group: "local", schema: integer(0, 65_535), description: "Port of Anvil.", default: "8545, or a free one" },
  BLOCK_TIME: {
    group: "local",
    schema: integer(0, 3600),
    description: "Seconds between Anvil blocks (as on Base); `0` is a block per transaction.",
    default: "a block per transaction; 2 when forking",
  },
  FORK_URL: {
    group: "local",
    schema: httpUrl,
    sensitive: true,
    description: "An http(s) RPC URL of Base or Base Sepolia: Anvil forks it and the local stack settles with the real USDC.",
  },
  FORK_BLOCK_NUMBER: {
    group: "local",
    schema: integer(0, Number.MAX_SAFE_INTEGER),
    description: "The block to fork at (requires `FORK_URL`).",
    default: "the fork's latest block",
  },
  VERBOSE: { group: "local", schema: z.enum(["0", "1"]), description: "`1` shows Ponder's log.", default: "0" },
} satisfies Record<string, Variable>;

export type ServiceVariable = keyof typeof SERVICE_VARIABLES;
export type NetworkVariable = keyof typeof NETWORK_VARIABLES;
