import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { type Address, encodeFunctionData, erc20Abi, getAddress, isAddressEqual } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { findIdempotentResource, recordIdempotentResource } from "../checkout/idempotency.js";
import { findSession } from "../checkout/session-record.js";
import { eip681Uri } from "../checkout/session-view.js";
import { networkByChainId } from "../config/enabled-networks.js";
import type { NetworkConfig } from "../config/networks.js";
import { keysetPage } from "../http/cursor.js";
import { ProblemError, problem, problems } from "../http/problem.js";
import { IndexNotReadyError } from "../http/unavailable-problems.js";
import { findOrderOfPartner, ordersByIds } from "../orders/order-record.js";
import { recordEvent } from "../outbox/record-event.js";
import { readBranding } from "../partners/branding.js";
import { paymentAddressOwner } from "../partners/payment-addresses.js";
import { findPayment, movePayment, type Payment, paymentOfSession } from "../payments/payment-record.js";
import type { Database } from "../store/database.js";
import type { RefundReason, RefundStatus } from "../store/refund-tables.js";
import { allows } from "../store/transition-table.js";
import { logKey } from "../values/log-key.js";
import {
  changeCommittedRefunds,
  findRefund,
  insertRefund,
  moveRefund,
  orderRefunds,
  type PaymentRef,
  type Refund,
  refundOfTokenHash,
  refundsOfPayment,
  refundsPage,
  refundTransitions,
  replaceRefundToken,
} from "./refund-record.js";
import { reasonForUnresolved, refundTotals, refusedDestination, remainingRefundable } from "./refund-rules.js";

/** Refund tokens are the customer's credential for one refund's page: random, stored as SHA-256 only. */
export const hashRefundToken = (token: string) => createHash("sha256").update(token).digest("hex");
const newRefundToken = () => `rt_${randomBytes(24).toString("base64url")}`;

/** `<base>/refund/<id>#rt=<token>`: the token rides in the fragment, which browsers never send. */
export function refundPageUrl(baseUrl: string, refundId: string, token: string): string {
  return `${baseUrl}/refund/${encodeURIComponent(refundId)}#rt=${encodeURIComponent(token)}`;
}

const IDEMPOTENCY_SCOPE = "refund";

export type CreateRefundInput = {
  partnerId: string;
  orderId?: string;
  payment?: PaymentRef;
  amount?: bigint;
  reason: RefundReason;
  note?: string;
  destination?: "payer" | Address;
  idempotencyKey: string;
  /** What the idempotency key protects: the request as the partner sent it. */
  requestHash: string;
};

export type CreatedRefund = { refund: Refund; token: string | null; replayed: boolean };

class IdempotencyRace extends Error {}

const exceedsRemaining = (remaining: bigint, asked: bigint | undefined) =>
  problem(
    "refund_exceeds_remaining",
    remaining === 0n
      ? "Nothing remains to refund: live refunds already add up to what was paid."
      : `At most ${remaining} base units remain refundable${asked === undefined ? "" : `; ${asked} were asked`}.`,
    { remaining: remaining.toString() },
  );

/** The payment a refund sends back, and what it is about. */
type Subject = { payment: Payment; orderId: string | null; subject: "order" | "payment" };

async function subjectOf(
  trx: Kysely<Database>,
  input: Pick<CreateRefundInput, "partnerId" | "orderId" | "payment">,
): Promise<Subject> {
  if (input.orderId !== undefined) {
    const order = await findOrderOfPartner(trx, { partnerId: input.partnerId, orderId: input.orderId });
    if (order === undefined) throw problems.notFound(`Order ${input.orderId}`);
    const payment =
      order.settledSessionId === null
        ? undefined
        : await paymentOfSession(trx, { sessionId: order.settledSessionId, statuses: ["settled", "attached"] });
    if (payment === undefined) {
      throw problem(
        "order_not_paid",
        "Only a paid order can be refunded; a payment that matched no session is refunded by its key.",
      );
    }
    return { payment, orderId: order.id, subject: "order" };
  }
  const key = input.payment as PaymentRef;
  const payment = await findPayment(trx, key);
  // Another partner's payment is as missing as one that does not exist.
  const owner =
    payment === undefined
      ? undefined
      : ((await paymentAddressOwner(trx, { chainId: payment.chainId, address: payment.to })) ?? payment.partnerId);
  if (payment === undefined || owner !== input.partnerId) throw problems.notFound("Payment");
  const session = payment.sessionId === null ? undefined : await findSession(trx, payment.sessionId);
  if (payment.status === "settled" || payment.status === "attached") {
    return { payment, orderId: session?.orderId ?? null, subject: "order" };
  }
  if (payment.status === "unresolved" || payment.status === "refund_requested") {
    return { payment, orderId: session?.orderId ?? null, subject: "payment" };
  }
  throw problem(
    "payment_not_refundable",
    `This payment is ${payment.status}: only a credited or an unresolved payment can be refunded.`,
  );
}

const serviceAddressCache = new WeakMap<AppContext["networks"], readonly Address[]>();

/**
 * The service's own addresses on every network, where refunded money would be stuck:
 * each relayer, certificate contract, reward distributor and token, and the voucher
 * signer. Every network's, since one key or one deployment may serve several.
 */
export function serviceAddresses(context: Pick<AppContext, "networks" | "settings">): readonly Address[] {
  const cached = serviceAddressCache.get(context.networks);
  if (cached !== undefined) return cached;
  const addresses = context.networks.flatMap((network) => [
    network.usdc,
    ...(network.certificate === undefined ? [] : [network.certificate]),
    ...(network.rewardDistributor === undefined ? [] : [network.rewardDistributor]),
    ...(network.relayerPrivateKey === undefined ? [] : [privateKeyToAccount(network.relayerPrivateKey).address]),
  ]);
  const voucherKey = context.settings.voucherPrivateKey;
  if (voucherKey !== undefined) addresses.push(privateKeyToAccount(voucherKey).address);
  serviceAddressCache.set(context.networks, addresses);
  return addresses;
}

/** Refuses a destination money must not go to (SPEC 15, issue 40), with the code that says why. */
export async function checkDestination(
  db: Kysely<Database>,
  params: { destination: Address; network: NetworkConfig; serviceAddresses: readonly Address[] },
): Promise<void> {
  const { destination, network } = params;
  const isPaymentAddress =
    network.paymentAddresses.some((address) => isAddressEqual(address, destination)) ||
    (await paymentAddressOwner(db, { chainId: network.chainId, address: destination })) !== undefined;
  const refusal = refusedDestination({
    destination,
    token: network.usdc,
    isPaymentAddress,
    serviceAddresses: params.serviceAddresses,
  });
  if (refusal === undefined) return;
  const detail = {
    destination_is_zero_address: "The zero address burns what it receives; enter the address that should receive the refund.",
    destination_is_token: "That is the USDC contract itself: money sent there is lost. Enter your own wallet's address.",
    destination_is_payment_address:
      "That is a shop's payment address on this service: money sent there would be taken for a new payment. Enter your own wallet's address.",
    destination_is_service_address:
      "That address belongs to the payment service itself (a relayer or one of its contracts): money sent there could not be given back. Enter your own wallet's address.",
  }[refusal];
  throw new ProblemError({ code: refusal, detail });
}

/**
 * The indexed head of a chain now: a refund that becomes ready records it, and only a
 * transfer of a later block completes it (refund-rules.ts, `minedAfterReady`). Read
 * before the refund's transaction, so the store is not held while the index answers.
 */
async function readyBlockOf(context: AppContext, chainId: number): Promise<bigint> {
  const head = (await context.indexed.heads()).get(chainId);
  if (head === undefined) throw new IndexNotReadyError(`no indexed block of chain ${chainId} yet`);
  return head.blockNumber;
}

/**
 * Creates a refund of a paid order or of an unresolved payment, in one transaction
 * with its guard, its events and its idempotency key: the sum of a payment's live
 * refunds never exceeds what it paid, also between concurrent requests (see
 * `changeCommittedRefunds`). Without a destination it waits for the customer's.
 */
export async function createRefund(context: AppContext, input: CreateRefundInput): Promise<CreatedRefund> {
  const readyBlocks = input.destination === undefined ? undefined : await context.indexed.heads();
  for (let attempt = 0; ; attempt++) {
    try {
      return await context.store.transaction().execute((trx) => createRefundInTransaction(trx, context, input, readyBlocks));
    } catch (error) {
      // A concurrent request with the same key recorded it first: answer what it created.
      if (error instanceof IdempotencyRace && attempt < 3) continue;
      throw error;
    }
  }
}

async function createRefundInTransaction(
  trx: Kysely<Database>,
  context: AppContext,
  input: CreateRefundInput,
  /** The indexed heads read before the transaction, when the refund may be ready at once. */
  readyBlocks?: Map<number, { blockNumber: bigint }>,
): Promise<CreatedRefund> {
  const now = Date.now();
  const scoped = { partnerId: input.partnerId, scope: IDEMPOTENCY_SCOPE, key: input.idempotencyKey, hash: input.requestHash };
  const earlier = await findIdempotentResource(trx, scoped);
  if (earlier !== undefined) {
    const refund = await findRefund(trx, earlier);
    if (refund === undefined) throw new Error(`refund ${earlier} of an idempotency key is missing`);
    // The token is stored hashed: a replay that may show the customer's link again issues a new one.
    let token: string | null = null;
    if (refund.status === "awaiting_destination") {
      token = newRefundToken();
      if (!(await replaceRefundToken(trx, { refundId: refund.id, tokenHash: hashRefundToken(token), now }))) token = null;
    }
    return { refund, token, replayed: true };
  }

  const { payment, orderId, subject } = await subjectOf(trx, input);
  const network = networkByChainId(context, payment.chainId);
  if (network === undefined) throw problems.invalidRequest("The payment's network is not enabled.");
  const destination =
    input.destination === undefined ? null : input.destination === "payer" ? payment.from : getAddress(input.destination);
  if (destination !== null) await checkDestination(trx, { destination, network, serviceAddresses: serviceAddresses(context) });
  const readyBlock = destination === null ? null : readyBlocks?.get(payment.chainId)?.blockNumber;
  if (readyBlock === undefined) throw new IndexNotReadyError(`no indexed block of chain ${payment.chainId} yet`);

  const remaining = remainingRefundable(payment.amount, await refundsOfPayment(trx, payment));
  const amount = input.amount ?? remaining;
  if (amount <= 0n || amount > remaining) throw exceedsRemaining(remaining, input.amount);
  // The guard: re-checked against the sum as it is now, whoever wrote it since the read above.
  const fits = await changeCommittedRefunds(trx, { payment, paid: payment.amount, delta: amount, now });
  if (fits === undefined) {
    const now2 = remainingRefundable(payment.amount, await refundsOfPayment(trx, payment));
    throw exceedsRemaining(now2, input.amount);
  }

  const token = destination === null ? newRefundToken() : null;
  const refund: Refund = {
    id: `rfd_${randomUUID().replaceAll("-", "")}`,
    partnerId: input.partnerId,
    orderId,
    payment: { chainId: payment.chainId, transactionHash: payment.transactionHash, logIndex: payment.logIndex },
    subject,
    chainId: payment.chainId,
    tokenAddress: network.usdc,
    from: payment.to,
    payer: payment.from,
    amount,
    reason: input.reason,
    note: input.note ?? null,
    destination,
    status: destination === null ? "awaiting_destination" : "ready",
    readyAt: destination === null ? null : now,
    readyBlock,
    transfer: null,
    createdAt: now,
    updatedAt: now,
    succeededAt: null,
    cancelledAt: null,
  };
  await insertRefund(trx, { refund, tokenHash: token === null ? null : hashRefundToken(token) });
  // The old marker: an unresolved payment being sent back says so in the payments list.
  if (subject === "payment" && payment.status === "unresolved") {
    await movePayment(trx, { payment, transition: "request_refund", now, set: { resolution: `refund ${refund.id}` } });
  }
  if (!(await recordIdempotentResource(trx, { ...scoped, resourceId: refund.id, now }))) throw new IdempotencyRace();
  await recordRefundEvent(trx, { refund, type: "refund.created", now });
  if (refund.status === "ready") await recordRefundEvent(trx, { refund, type: "refund.ready", now });
  return { refund, token, replayed: false };
}

/** The refund's event, in the transaction of the change it reports (docs/events.md). */
export async function recordRefundEvent(
  trx: Kysely<Database>,
  params: {
    refund: Refund;
    type: "refund.created" | "refund.ready" | "refund.succeeded" | "refund.cancelled" | "refund.reorged";
    now: number;
  },
) {
  const { refund } = params;
  const order = refund.orderId === null ? undefined : (await ordersByIds(trx, [refund.orderId])).get(refund.orderId);
  const paymentId = logKey(refund.payment);
  await recordEvent(trx, {
    partnerId: refund.partnerId,
    type: params.type,
    orderingKey: refund.orderId ?? paymentId,
    now: params.now,
    data: {
      refundId: refund.id,
      orderId: refund.orderId ?? undefined,
      externalOrderId: order?.externalOrderId,
      purchaseId: order?.purchaseId,
      paymentId: refund.subject === "payment" ? paymentId : undefined,
      status: refund.status,
      amount: refund.amount.toString(),
      reason: refund.reason,
      destination: refund.destination,
      chainId: refund.chainId,
      from: refund.from,
      transactionHash: refund.transfer?.transactionHash,
      logIndex: refund.transfer?.logIndex,
    },
  });
}

const notFound = (refundId: string) => problems.notFound(`Refund ${refundId}`);

/** The partner's own refund; another partner's is as missing as one that does not exist. */
export async function partnerRefund(db: Kysely<Database>, params: { partnerId: string; refundId: string }): Promise<Refund> {
  const refund = await findRefund(db, params.refundId);
  if (refund === undefined || refund.partnerId !== params.partnerId) throw notFound(params.refundId);
  return refund;
}

/** Cancels a refund no money moved for yet (`awaiting_destination` or `ready`): its amount is refundable again. */
export async function cancelRefund(context: AppContext, params: { partnerId: string; refundId: string }): Promise<Refund> {
  return context.store.transaction().execute(async (trx) => {
    const now = Date.now();
    const refund = await partnerRefund(trx, params);
    if (refund.status === "cancelled") return refund;
    const notCancellable = () =>
      problem(
        "refund_not_cancellable",
        `This refund is ${refund.status}: its transfer was seen, so money already left the payment address.`,
      );
    if (!allows(refundTransitions, "cancel", refund.status)) throw notCancellable();
    if (!(await moveRefund(trx, { refund, transition: "cancel", now }))) throw notCancellable();
    const released = await changeCommittedRefunds(trx, {
      payment: refund.payment,
      paid: refund.amount, // unused by a release: only an addition is capped by what was paid
      delta: -refund.amount,
      now,
    });
    if (released === undefined) throw new Error(`refund ${refund.id}: its guard holds less than its amount`);
    const cancelled: Refund = { ...refund, status: "cancelled", cancelledAt: now, updatedAt: now };
    await recordRefundEvent(trx, { refund: cancelled, type: "refund.cancelled", now });
    return cancelled;
  });
}

const invalidToken = () =>
  problem("invalid_refund_token", "Open the refund link the shop sent you; it carries the token of this refund.");

/** The refund a customer's token opens: only the refund it was issued for. */
export async function refundOfToken(db: Kysely<Database>, params: { refundId: string; refundToken: string }): Promise<Refund> {
  const refund = await refundOfTokenHash(db, hashRefundToken(params.refundToken));
  if (refund === undefined || refund.id !== params.refundId) throw invalidToken();
  return refund;
}

/** The customer names the receiving address (once): the refund becomes `ready` and the partner hears `refund.ready`. */
export async function setRefundDestination(
  context: AppContext,
  params: { refundId: string; refundToken: string; destination: Address },
): Promise<Refund> {
  const peek = await refundOfToken(context.store, params);
  const readyBlock = await readyBlockOf(context, peek.chainId);
  return context.store.transaction().execute(async (trx) => {
    const now = Date.now();
    const refund = await refundOfToken(trx, params);
    const locked = () =>
      problem(
        "refund_destination_locked",
        refund.status === "cancelled"
          ? "The shop cancelled this refund; contact the shop."
          : "The receiving address of this refund is already set and cannot be changed; contact the shop if it is wrong.",
        { refundStatus: refund.status },
      );
    if (refund.status !== "awaiting_destination") throw locked();
    const network = networkByChainId(context, refund.chainId);
    if (network === undefined) throw problems.invalidRequest("The refund's network is not enabled.");
    const destination = getAddress(params.destination);
    await checkDestination(trx, { destination, network, serviceAddresses: serviceAddresses(context) });
    if (!(await moveRefund(trx, { refund, transition: "set_destination", now, input: { destination, readyBlock } })))
      throw locked();
    const ready: Refund = { ...refund, status: "ready", destination, readyAt: now, readyBlock, updatedAt: now };
    await recordRefundEvent(trx, { refund: ready, type: "refund.ready", now });
    return ready;
  });
}

export type RefundView = ReturnType<typeof refundView>;

/** The transfer that completes a refund, ready for any wallet: an EIP-681 link and the calldata. */
export function refundInstructions(refund: Refund) {
  if (refund.destination === null || refund.status === "cancelled") return null;
  return {
    chainId: refund.chainId,
    tokenAddress: refund.tokenAddress,
    from: refund.from,
    to: refund.destination,
    amount: refund.amount.toString(),
    uri: eip681Uri({
      token: refund.tokenAddress,
      chainId: refund.chainId,
      recipient: refund.destination,
      amount: refund.amount.toString(),
    }),
    transaction: {
      to: refund.tokenAddress,
      data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [refund.destination, refund.amount] }),
      chainId: refund.chainId,
    },
  };
}

/** A refund as partners read it (SPEC 15's shape). */
export function refundView(refund: Refund, params: { externalOrderId: string | null; customerUrl: string | null }) {
  return {
    id: refund.id,
    status: refund.status,
    orderId: refund.orderId,
    externalOrderId: params.externalOrderId,
    ...(refund.subject === "payment" ? { paymentId: logKey(refund.payment) } : {}),
    payment: refund.payment,
    amount: refund.amount.toString(),
    reason: refund.reason,
    note: refund.note,
    destination: refund.destination,
    customerUrl: params.customerUrl,
    instructions: refundInstructions(refund),
    transactionHash: refund.transfer?.transactionHash ?? null,
    createdAt: new Date(refund.createdAt).toISOString(),
    readyAt: refund.readyAt === null ? null : new Date(refund.readyAt).toISOString(),
    succeededAt: refund.succeededAt === null ? null : new Date(refund.succeededAt).toISOString(),
    cancelledAt: refund.cancelledAt === null ? null : new Date(refund.cancelledAt).toISOString(),
  };
}

async function externalOrderIds(db: Kysely<Database>, refunds: readonly Refund[]) {
  const orders = await ordersByIds(
    db,
    refunds.flatMap((refund) => (refund.orderId === null ? [] : [refund.orderId])),
  );
  return (refund: Refund) => (refund.orderId === null ? null : (orders.get(refund.orderId)?.externalOrderId ?? null));
}

export async function viewRefund(db: Kysely<Database>, refund: Refund, customerUrl: string | null = null): Promise<RefundView> {
  const external = await externalOrderIds(db, [refund]);
  return refundView(refund, { externalOrderId: external(refund), customerUrl });
}

const cursorSchema = z.object({ t: z.number().int(), i: z.string().max(100) });

/** A partner's refunds, newest first, by order and status (`GET /v1/refunds`). */
/** A payment's id as the API writes it (`<chainId>:<transactionHash>:<logIndex>`, the refund's `paymentId`), its parts. */
export const PAYMENT_ID = /^(\d{1,10}):(0x[0-9a-fA-F]{64}):(\d{1,10})$/;

function paymentOfId(paymentId: string): PaymentRef {
  const [, chainId, transactionHash, logIndex] = PAYMENT_ID.exec(paymentId) ?? [];
  return { chainId: Number(chainId), transactionHash: (transactionHash ?? "0x") as `0x${string}`, logIndex: Number(logIndex) };
}

export async function listRefunds(
  db: Kysely<Database>,
  params: { partnerId: string; orderId?: string; paymentId?: string; status?: RefundStatus; cursor?: string; limit: number },
) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: cursorSchema,
    fetch: (after, take) =>
      refundsPage(db, {
        partnerId: params.partnerId,
        orderId: params.orderId,
        payment: params.paymentId === undefined ? undefined : paymentOfId(params.paymentId),
        status: params.status,
        after: after === undefined ? undefined : { createdAt: after.t, id: after.i },
        take,
      }),
    keyOf: (refund) => ({ t: refund.createdAt, i: refund.id }),
    view: async (page) => {
      const external = await externalOrderIds(db, page);
      return page.map((refund) => refundView(refund, { externalOrderId: external(refund), customerUrl: null }));
    },
  });
}

/** What the customer's refund page shows: the shop, the amount, the state; no partner-only detail. */
export async function publicRefundView(context: AppContext, refund: Refund) {
  const network = networkByChainId(context, refund.chainId);
  const external = await externalOrderIds(context.store, [refund]);
  return {
    id: refund.id,
    status: refund.status,
    amount: refund.amount.toString(),
    decimals: 6 as const,
    token: "USDC" as const,
    network: network?.name ?? null,
    chainId: refund.chainId,
    externalOrderId: external(refund),
    destination: refund.destination,
    transactionHash: refund.transfer?.transactionHash ?? null,
    shop: await readBranding(context.store, refund.partnerId),
    createdAt: new Date(refund.createdAt).toISOString(),
    succeededAt: refund.succeededAt === null ? null : new Date(refund.succeededAt).toISOString(),
  };
}

/**
 * The old marker (`POST /v1/payments/…/refund-requested`, and the admin's): an unresolved
 * payment is sent back whole, as a refund waiting for the customer's destination.
 * Runs in the caller's transaction; `partnerId` is the partner asking (absent for an
 * administrator, who acts for the owner of the receiving address).
 */
export async function refundUnresolvedPayment(
  trx: Kysely<Database>,
  context: AppContext,
  params: PaymentRef & { partnerId?: string; note?: string },
): Promise<CreatedRefund> {
  const payment = await findPayment(trx, params);
  const owner =
    payment === undefined
      ? undefined
      : ((await paymentAddressOwner(trx, { chainId: payment.chainId, address: payment.to })) ?? payment.partnerId ?? undefined);
  if (payment === undefined || owner === undefined || (params.partnerId !== undefined && owner !== params.partnerId)) {
    throw problems.notFound("Payment");
  }
  if (payment.status !== "unresolved") {
    throw problem("payment_not_unresolved", `This payment is ${payment.status}.`);
  }
  const key = { chainId: payment.chainId, transactionHash: payment.transactionHash, logIndex: payment.logIndex };
  return createRefundInTransaction(trx, context, {
    partnerId: owner,
    payment: key,
    reason: reasonForUnresolved(payment.reason),
    note: params.note,
    idempotencyKey: `refund-requested:${logKey(key)}`,
    requestHash: hashRefundToken(`refund-requested:${logKey(key)}`),
  });
}

/** What an order or purchase view shows of its refunds (SPEC 15): succeeded, in progress, and `none`/`partial`/`full`. */
export type RefundSummary = { amountRefunded: string; amountRefundPending: string; refundStatus: "none" | "partial" | "full" };

/** The refund summaries of these orders, given what each one's crediting payment paid (null: not paid). */
export async function refundSummaries(
  db: Kysely<Database>,
  orders: readonly { orderId: string; paid: bigint | null }[],
): Promise<Map<string, RefundSummary>> {
  const summaryOf = await refundSummariesOf(
    db,
    orders.map((order) => order.orderId),
  );
  return new Map(orders.map((order) => [order.orderId, summaryOf(order)]));
}

/**
 * The refunds of these orders, read now and summed once each order's payment is known: a
 * caller reads them beside the payment instead of after it (one round trip fewer).
 */
export async function refundSummariesOf(
  db: Kysely<Database>,
  orderIds: readonly string[],
): Promise<(order: { orderId: string; paid: bigint | null }) => RefundSummary> {
  const refunds = await orderRefunds(db, orderIds);
  return (order) => {
    const totals = refundTotals(order.paid, refunds.get(order.orderId) ?? []);
    return {
      amountRefunded: totals.amountRefunded.toString(),
      amountRefundPending: totals.amountRefundPending.toString(),
      refundStatus: totals.refundStatus,
    };
  };
}
