import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Address } from "viem";
import type { AppContext } from "../app-context.js";
import { enabledNetwork } from "../config/enabled-networks.js";
import type { NetworkConfig, NetworkName } from "../config/networks.js";
import { ProblemError, problem } from "../http/problem.js";
import { findOrCreateOrder, getOrder } from "../orders/order-record.js";
import { paymentAddressesOnChain } from "../partners/payment-addresses.js";
import type { Database } from "../store/database.js";
import { checksum } from "../values/checksum-address.js";
import { reserveAmount } from "./amount-reference.js";
import { issueClientToken } from "./client-tokens.js";
import { expireSession } from "./expire-session.js";
import { type HostedOptions, savePresentation } from "./hosted-options.js";
import { findIdempotentResource, recordIdempotentResource, requestHash } from "./idempotency.js";
import { type CheckoutSession, findSession, insertSession, openSessionsOfOrder, otherKindOfOrder } from "./session-record.js";

/** Sessions stay open 30 minutes unless the partner asks for 5 minutes to 24 hours. */
export const DEFAULT_SESSION_SECONDS = 1_800;
/** Transfers that arrive after expiry are still detected (and reported as late) for 7 days. */
export const LATE_WINDOW_MS = 7 * 24 * 3_600_000;

export type CreateSessionInput = {
  partnerId: string;
  kind: "commerce" | "rwa";
  network?: NetworkName;
  externalOrderId: string;
  externalProductId: string;
  productName: string;
  productCategory: string;
  quantity: number;
  totalPriceUsdc: bigint;
  shippingRequired: boolean;
  certificateEnabled: boolean;
  expiresInSeconds?: number;
  /** RWA: only a transfer from this wallet settles the session. */
  requiredPayer?: Address;
  /** Payment addresses to use instead of the partner's own (an offering's settlement address). */
  paymentAddresses?: string[];
  /** The partner's key-value pairs, strings only as the API promises (`metadata` of the session and its events). */
  metadata?: Record<string, string>;
  /** Hosted page options (redirects, prefill, line items); metadata travels in `metadata`. */
  presentation?: Omit<HostedOptions, "metadata">;
  idempotencyKey?: string;
  /** What the idempotency key protects: the request as the partner sent it. */
  requestBody?: unknown;
};

export type CreatedSession = {
  session: CheckoutSession;
  clientToken: string;
  orderId: string;
  purchaseId: string;
  /** True when an earlier request with the same key created the session. */
  replayed: boolean;
};

export class IdempotencyRace extends Error {}

/**
 * Creates a checkout session for an order, or answers with the one that already
 * exists: the same session for a replayed idempotency key, and the settled
 * session when the order is already paid (a customer never pays twice).
 */
export async function createCheckoutSession(context: AppContext, input: CreateSessionInput): Promise<CreatedSession> {
  try {
    return await context.store.transaction().execute((trx) => createSessionInTransaction(trx, context, input));
  } catch (error) {
    // Two requests with one key at once: the loser now finds the winner's session.
    if (error instanceof IdempotencyRace)
      return context.store.transaction().execute((trx) => createSessionInTransaction(trx, context, input));
    throw error;
  }
}

/**
 * The same, inside the caller's transaction (an RWA purchase reserves its units and
 * creates its session in one). With an idempotency key, a concurrent request with the
 * same key makes this throw `IdempotencyRace`: the caller retries in a new transaction.
 */
export async function createSessionInTransaction(
  trx: Kysely<Database>,
  context: Pick<AppContext, "networks">,
  input: CreateSessionInput,
): Promise<CreatedSession> {
  const now = Date.now();
  const lifetimeMs = (input.expiresInSeconds ?? DEFAULT_SESSION_SECONDS) * 1000;
  const hash =
    input.idempotencyKey === undefined
      ? ""
      : requestHash(input.requestBody ?? { ...input, totalPriceUsdc: input.totalPriceUsdc.toString() });
  const scope = "checkout_session";

  if (input.idempotencyKey !== undefined) {
    const sessionId = await findIdempotentResource(trx, { partnerId: input.partnerId, scope, key: input.idempotencyKey, hash });
    if (sessionId !== undefined) return reissue(trx, { sessionId, now, lifetimeMs, replayed: true });
  }
  const remember = async (sessionId: string) => {
    if (input.idempotencyKey === undefined) return;
    const recorded = await recordIdempotentResource(trx, {
      partnerId: input.partnerId,
      scope,
      key: input.idempotencyKey,
      hash,
      resourceId: sessionId,
      now,
    });
    if (!recorded) throw new IdempotencyRace();
  };

  const network = pickNetwork(context.networks, input.network);
  const order = await findOrCreateOrder(trx, { partnerId: input.partnerId, externalOrderId: input.externalOrderId, now });
  await refuseOtherKind(trx, { orderId: order.id, kind: input.kind });

  if (order.settledSessionId !== null) {
    await remember(order.settledSessionId);
    return reissue(trx, { sessionId: order.settledSessionId, now, lifetimeMs, replayed: false });
  }

  const open = await openSessionsOfOrder(trx, order.id);
  if (open.some((session) => session.status === "payment_pending")) {
    throw problem(
      "payment_in_progress",
      "Wait for the purchase.settled event (or read the order) before asking the customer for money again.",
    );
  }
  for (const superseded of open) {
    await expireSession(trx, { session: superseded, now, reason: "superseded" });
  }

  const paymentAddresses = input.paymentAddresses ?? (await partnerPaymentAddresses(trx, input.partnerId, network));
  const watched = new Set(network.paymentAddresses.map((address) => address.toLowerCase()));
  const usable = paymentAddresses.map((address) => address.toLowerCase()).filter((address) => watched.has(address));
  if (usable.length === 0) {
    throw problem("no_payment_address", `The partner has no payment address on ${network.name} that the indexer watches.`);
  }

  const sessionId = `cs_${randomUUID().replaceAll("-", "")}`;
  const expiresAt = now + lifetimeMs;
  const lateUntil = expiresAt + LATE_WINDOW_MS;
  const reference = await reserveAmount(trx, {
    chainId: network.chainId,
    paymentAddresses: usable,
    total: input.totalPriceUsdc,
    sessionId,
    releasedAt: lateUntil,
    now,
  });
  const session = await insertSession(trx, {
    id: sessionId,
    partnerId: input.partnerId,
    orderId: order.id,
    kind: input.kind,
    status: "awaiting_payment",
    network: network.name,
    chainId: network.chainId,
    tokenAddress: checksum(network.usdc),
    paymentAddress: checksum(reference.paymentAddress),
    totalPriceUsdc: input.totalPriceUsdc,
    amountOffset: reference.offset,
    amountDue: reference.amountDue,
    requiredPayer: input.requiredPayer === undefined ? null : checksum(input.requiredPayer),
    externalOrderId: input.externalOrderId,
    externalProductId: input.externalProductId,
    productName: input.productName,
    productCategory: input.productCategory,
    quantity: input.quantity,
    shippingRequired: input.shippingRequired,
    certificateEnabled: input.certificateEnabled,
    contact: null,
    delivery: null,
    metadata: input.metadata ?? null,
    expiresAt,
    lateUntil,
    createdAt: now,
    updatedAt: now,
  });
  if (input.presentation !== undefined) await savePresentation(trx, sessionId, input.presentation);
  const clientToken = await issueClientToken(trx, { sessionId, expiresAt, now });
  await remember(sessionId);
  return {
    session,
    clientToken,
    orderId: order.id,
    purchaseId: order.purchaseId,
    replayed: false,
  };
}

function pickNetwork(networks: NetworkConfig[], name: NetworkName | undefined): NetworkConfig {
  // The first enabled network is the default (loadNetworks refuses an empty list).
  return name === undefined ? networks[0]! : enabledNetwork({ networks }, name);
}

async function partnerPaymentAddresses(trx: Kysely<Database>, partnerId: string, network: NetworkConfig): Promise<string[]> {
  const rows = await paymentAddressesOnChain(trx, { chainId: network.chainId, partnerId });
  return rows.map((row) => row.address);
}

/**
 * An investor's purchase and a partner's order never share an order: the commerce
 * API (an issuer's partner holds a key too) must not re-open a purchase, receive a
 * client token for it and claim the investor's certificate for another wallet.
 */
async function refuseOtherKind(trx: Kysely<Database>, params: { orderId: string; kind: CreateSessionInput["kind"] }) {
  if ((await otherKindOfOrder(trx, params)) === undefined) return;
  throw new ProblemError({
    status: 409,
    code: params.kind === "commerce" ? "order_not_commerce" : "order_not_rwa",
    title: "This order belongs to another kind of checkout",
    detail:
      params.kind === "commerce"
        ? "This externalOrderId is an investor's purchase made through the RWA portal; it cannot be paid or claimed through the commerce API."
        : "A commerce order already uses this id.",
  });
}

async function reissue(
  trx: Kysely<Database>,
  params: { sessionId: string; now: number; lifetimeMs: number; replayed: boolean },
): Promise<CreatedSession> {
  const session = await findSession(trx, params.sessionId);
  if (session === undefined) throw new Error(`checkout session ${params.sessionId} not found`);
  const order = await getOrder(trx, session.orderId);
  // A fresh browser credential: tokens are stored hashed, so the first one cannot be read back.
  const expiresAt = Math.max(session.expiresAt, session.status === "settled" ? params.now + params.lifetimeMs : 0);
  const clientToken = await issueClientToken(trx, { sessionId: session.id, expiresAt, now: params.now });
  return {
    session,
    clientToken,
    orderId: order.id,
    purchaseId: order.purchaseId,
    replayed: params.replayed,
  };
}
