import { type Address, encodeFunctionData, getTypesForEIP712Domain, type Hex, parseAbi, type TypedDataDomain } from "viem";
import { subscriptionManagerAbi } from "../../contracts/generated/SubscriptionManager.js";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { readTokenDomain } from "../gasless/eip3009.js";
import { RelayFailure, relayContractCall, relayerOf } from "../gasless/relayer.js";
import { ProblemError, problem } from "../http/problem.js";
import { readBranding } from "../partners/branding.js";
import { chargesOfSubscription } from "./charge-record.js";
import { recordAuthorizationTransaction, recordTerms, type Subscription } from "./subscription-record.js";
import { permitValueOf } from "./subscription-rules.js";
import {
  cancelTypedData,
  OPEN_ENDED,
  permitTypedData,
  type SubscriptionTerms,
  subscriptionIdOnChain,
  subscriptionSalt,
  subscriptionTypedData,
} from "./subscription-terms.js";
import { nextChargeOf, subscriptionOfToken } from "./subscriptions.js";

/**
 * The customer's side of a subscription (SPEC 18, docs/subscriptions.md "The customer's
 * signature"), authorised by the client token of its link: the service issues the exact terms
 * the wallet signs, then checks the signature against them and has the relayer register them.
 */

/** How long the permit the customer signs stays usable: long enough to sign, short enough not to linger. */
const PERMIT_VALIDITY_SECONDS = 3_600n;

const noncesAbi = parseAbi(["function nonces(address owner) view returns (uint256)"]);

function networkOf(context: AppContext, subscription: Subscription) {
  const network = networkByChainId(context, subscription.chainId);
  const relayer = network === undefined ? undefined : relayerOf(context, network, context.store);
  if (network === undefined || relayer === undefined) {
    throw problem("subscriptions_unavailable", "No relayer runs on this subscription's network.");
  }
  return { network, relayer };
}

function assertAwaiting(subscription: Subscription) {
  if (subscription.status === "awaiting_authorization") return;
  throw new ProblemError({
    code: "subscription_not_awaiting_authorization",
    detail: `This subscription is ${subscription.status}.`,
    extensions: { subscriptionStatus: subscription.status },
  });
}

/** The terms as recorded when they were issued: what the signature must be over, exactly. */
export function issuedTerms(subscription: Subscription): SubscriptionTerms | undefined {
  if (subscription.subscriber === null || subscription.termsStart === null || subscription.termsEnd === null) return undefined;
  return {
    subscriber: subscription.subscriber,
    payee: subscription.payee,
    token: subscription.token,
    amount: subscription.amount,
    period: subscription.periodSeconds,
    start: subscription.termsStart,
    end: subscription.termsEnd,
    salt: subscriptionSalt(subscription.id),
  };
}

/** Numbers of the typed data as JSON carries them: every uint as a decimal string. */
const jsonable = (value: unknown): unknown =>
  typeof value === "bigint"
    ? value.toString()
    : Array.isArray(value)
      ? value.map(jsonable)
      : value !== null && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, jsonable(inner)]))
        : value;

/**
 * Typed data as `eth_signTypedData_v4` takes it: JSON numbers, and the `EIP712Domain` type list
 * that wallets hash the domain with (viem derives it from the domain, so it is never written out).
 */
function forWallet(typedData: { domain: TypedDataDomain; types: Record<string, unknown> }) {
  return jsonable({
    ...typedData,
    types: { EIP712Domain: getTypesForEIP712Domain({ domain: typedData.domain }), ...typedData.types },
  }) as Record<string, unknown>;
}

/**
 * Issues the terms for the customer's wallet (`POST /v1/public/subscriptions/{id}/terms`):
 * `start` is the chain's latest block time (or the partner's later `startAt`), the salt is
 * keccak256 of the `sub_` id, and the permit covers up to 12 periods. Recorded, so the service
 * knows the on-chain id before anything is sent; new terms replace older ones.
 */
export async function issueTerms(context: AppContext, params: { id: string; clientToken: string; subscriber: Address }) {
  const subscription = await subscriptionOfToken(context.store, params);
  assertAwaiting(subscription);
  const { relayer } = networkOf(context, subscription);
  const block = await relayer.client.getBlock({ blockTag: "latest" });
  const chainNow = Number(block.timestamp);
  const start = Math.max(chainNow, subscription.startAt === null ? 0 : Math.ceil(subscription.startAt / 1000));
  const end = subscription.endAt === null ? OPEN_ENDED : Math.floor(subscription.endAt / 1000);
  if (end <= start) {
    throw new ProblemError({
      code: "subscription_not_awaiting_authorization",
      detail: "The subscription's endAt has passed: nothing is left to subscribe to.",
      extensions: { subscriptionStatus: subscription.status },
    });
  }
  const terms: SubscriptionTerms = {
    subscriber: params.subscriber,
    payee: subscription.payee,
    token: subscription.token,
    amount: subscription.amount,
    period: subscription.periodSeconds,
    start,
    end,
    salt: subscriptionSalt(subscription.id),
  };
  const where = { chainId: subscription.chainId, contract: subscription.manager };
  const onchainId = subscriptionIdOnChain({ ...where, terms });
  const permitValue = permitValueOf(terms);
  const [tokenDomain, nonce] = await Promise.all([
    readTokenDomain(relayer.client, { token: subscription.token, chainId: subscription.chainId }),
    relayer.client.readContract({
      address: subscription.token,
      abi: noncesAbi,
      functionName: "nonces",
      args: [params.subscriber],
    }),
  ]);
  const deadline = block.timestamp + PERMIT_VALIDITY_SECONDS;
  const recorded = await context.store.transaction().execute((trx) =>
    recordTerms(trx, {
      subscription,
      subscriber: params.subscriber,
      onchainId,
      termsStart: start,
      termsEnd: end,
      permitValue,
      now: Date.now(),
    }),
  );
  if (!recorded) assertAwaiting({ ...subscription, status: "active" });
  return {
    terms: jsonable(terms) as Record<string, string | number>,
    typedData: forWallet(subscriptionTypedData({ ...where, terms })),
    onchainId,
    permit: {
      value: permitValue.toString(),
      deadline: deadline.toString(),
      typedData: forWallet(
        permitTypedData(tokenDomain, {
          owner: params.subscriber,
          spender: subscription.manager,
          value: permitValue,
          nonce,
          deadline,
        }),
      ),
    },
  };
}

export type SignedAuthorization = {
  id: string;
  clientToken: string;
  signature: Hex;
  permit?: { deadline: bigint; v: number; r: Hex; s: Hex };
};

/**
 * Checks the customer's signature against exactly the terms issued last (viem's
 * `verifyTypedData` through the chain, so a contract wallet's ERC-1271 answers too), then has
 * the relayer send `subscribeWithPermit` (or `subscribe`), charged to the partner's relay quota.
 * The subscription stays `awaiting_authorization` until its `Subscribed` is indexed.
 */
export async function relayAuthorization(context: AppContext, params: SignedAuthorization): Promise<{ transactionHash: Hex }> {
  const subscription = await subscriptionOfToken(context.store, params);
  assertAwaiting(subscription);
  const terms = issuedTerms(subscription);
  if (terms === undefined) {
    throw problem("subscription_terms_not_issued", "Ask for the terms first, and sign exactly them.");
  }
  const { relayer } = networkOf(context, subscription);
  const typedData = subscriptionTypedData({ chainId: subscription.chainId, contract: subscription.manager, terms });
  const valid = await relayer.client
    .verifyTypedData({ address: terms.subscriber, signature: params.signature, ...typedData })
    .catch(() => false);
  if (!valid) {
    throw problem(
      "subscription_bad_signature",
      "The signature is not the subscriber's over the terms this service issued: sign exactly the typed data it answered.",
    );
  }
  const permit = params.permit;
  if (permit !== undefined) {
    const block = await relayer.client.getBlock({ blockTag: "latest" });
    if (permit.deadline <= block.timestamp) {
      throw problem("subscription_permit_expired", "The permit's deadline has passed: ask for new terms and sign again.");
    }
  }
  const data =
    permit === undefined
      ? encodeFunctionData({ abi: subscriptionManagerAbi, functionName: "subscribe", args: [terms, params.signature] })
      : encodeFunctionData({
          abi: subscriptionManagerAbi,
          functionName: "subscribeWithPermit",
          args: [terms, params.signature, subscription.permitValue ?? 0n, permit.deadline, permit.v, permit.r, permit.s],
        });
  let hash: Hex;
  try {
    hash = (
      await relayContractCall(context, relayer, {
        charge: {
          partnerId: subscription.partnerId,
          chainId: subscription.chainId,
          purpose: "subscription",
          subjectId: subscription.id,
        },
        call: { to: subscription.manager, data },
      })
    ).hash;
  } catch (error) {
    if (!(error instanceof RelayFailure)) throw error;
    if (error.code === "authorization_rejected_on_chain") {
      throw problem("subscription_rejected_on_chain", error.message);
    }
    throw new ProblemError({ code: error.code, title: "The relayer could not send the registration", detail: error.message });
  }
  await context.store
    .transaction()
    .execute((trx) => recordAuthorizationTransaction(trx, { subscription, transactionHash: hash, now: Date.now() }));
  return { transactionHash: hash };
}

const iso = (epochMs: number | null) => (epochMs === null ? null : new Date(epochMs).toISOString());

/** The customer may cancel on chain while the service still charges it and its terms are registered. */
const customerMayCancel = (subscription: Subscription) =>
  (subscription.status === "active" || subscription.status === "past_due") && subscription.onchainId !== null;

/**
 * What the customer's pages show (`POST /v1/public/subscriptions/{id}/validate`): the shop, the
 * terms in their own units, the next charge, past charges with their transactions, and, while it
 * can be cancelled, the `Cancel` typed data the subscriber's wallet signs. No partner-only detail
 * (no external customer id, no metadata, no URLs carrying tokens).
 */
export async function customerSubscriptionView(context: AppContext, params: { id: string; clientToken: string }) {
  const subscription = await subscriptionOfToken(context.store, params);
  const charges = await chargesOfSubscription(context.store, subscription.id);
  const next = nextChargeOf(subscription, charges);
  const cancellable = customerMayCancel(subscription);
  return {
    id: subscription.id,
    status: subscription.status,
    productName: subscription.productName,
    amount: subscription.amount.toString(),
    decimals: 6 as const,
    interval: subscription.interval,
    periodSeconds: subscription.periodSeconds,
    network: networkByChainId(context, subscription.chainId)?.name ?? null,
    chainId: subscription.chainId,
    payee: subscription.payee,
    subscriber: subscription.subscriber,
    onchainId: subscription.onchainId,
    // A page reloaded while the registration is mined waits for it instead of asking for new signatures.
    authorizationTransactionHash: subscription.authorizationTransactionHash,
    endAt: iso(subscription.endAt),
    nextChargeAt: next === null ? null : new Date(next * 1000).toISOString(),
    cancelAtPeriodEnd: subscription.cancelAtPeriodEnd,
    cancelledBy: subscription.cancelledBy,
    cancelledAt: iso(subscription.cancelledAt),
    successUrl: subscription.successUrl,
    cancelUrl: subscription.cancelUrl,
    shop: await readBranding(context.store, subscription.partnerId),
    charges: charges.map((charge) => ({
      id: charge.id,
      periodIndex: Number(charge.periodIndex),
      amount: charge.amount.toString(),
      status: charge.status,
      transactionHash: charge.transactionHash,
      failureReason: charge.failureReason,
      nextRetryAt: iso(charge.nextRetryAt),
      paidAt: iso(charge.paidAt),
    })),
    cancel:
      cancellable && subscription.onchainId !== null
        ? {
            typedData: forWallet(
              cancelTypedData({
                chainId: subscription.chainId,
                contract: subscription.manager,
                onchainId: subscription.onchainId,
              }),
            ),
          }
        : null,
  };
}

/**
 * The customer's gasless cancel (`POST /v1/public/subscriptions/{id}/cancel`): the subscriber's
 * EIP-712 `Cancel(id)`, checked here as the contract will (ERC-1271 too), then sent as
 * `cancelWithSignature` by the relayer, charged to the partner like the registration. The
 * subscription turns `cancelled` (`cancelledBy: "customer"`) when the index shows `Cancelled`,
 * exactly as for a cancel sent from the customer's own wallet.
 */
export async function relayCustomerCancel(
  context: AppContext,
  params: { id: string; clientToken: string; signature: Hex },
): Promise<{ transactionHash: Hex }> {
  const subscription = await subscriptionOfToken(context.store, params);
  if (!customerMayCancel(subscription) || subscription.onchainId === null || subscription.subscriber === null) {
    throw new ProblemError({
      code: "subscription_not_cancellable",
      detail: `This subscription is ${subscription.status}${subscription.onchainId === null ? " and not registered on chain" : ""}.`,
      extensions: { subscriptionStatus: subscription.status },
    });
  }
  const { relayer } = networkOf(context, subscription);
  const typedData = cancelTypedData({
    chainId: subscription.chainId,
    contract: subscription.manager,
    onchainId: subscription.onchainId,
  });
  const valid = await relayer.client
    .verifyTypedData({ address: subscription.subscriber, signature: params.signature, ...typedData })
    .catch(() => false);
  if (!valid) {
    throw problem(
      "subscription_cancel_bad_signature",
      "The signature is not the subscriber's cancel of this subscription: sign exactly the typed data the page shows.",
    );
  }
  const data = encodeFunctionData({
    abi: subscriptionManagerAbi,
    functionName: "cancelWithSignature",
    args: [subscription.onchainId, params.signature],
  });
  try {
    const sent = await relayContractCall(context, relayer, {
      // Its own subject, so the registration's relays never use up the customer's cancel.
      charge: {
        partnerId: subscription.partnerId,
        chainId: subscription.chainId,
        purpose: "subscription",
        subjectId: `${subscription.id}:cancel`,
      },
      call: { to: subscription.manager, data },
    });
    return { transactionHash: sent.hash };
  } catch (error) {
    if (!(error instanceof RelayFailure)) throw error;
    if (error.code === "authorization_rejected_on_chain") {
      throw problem("subscription_cancel_rejected_on_chain", error.message);
    }
    throw new ProblemError({ code: error.code, title: "The relayer could not send the cancel", detail: error.message });
  }
}
