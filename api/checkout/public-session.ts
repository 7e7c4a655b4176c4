import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../app-context.js";
import { findCertificate } from "../certificates/certificate-record.js";
import { gaslessSessionView } from "../gasless/gasless-view.js";
import { ProblemError, problem } from "../http/problem.js";
import { shownConfirmations } from "../indexed/confirmations.js";
import { getOrder } from "../orders/order-record.js";
import { readBranding } from "../partners/branding.js";
import { rewardsOfOrders } from "../rewards/reward-record.js";
import { rewardView } from "../rewards/reward-view.js";
import { paymentOfSession, unresolvedPaymentOfSession } from "../settlement/payment-record.js";
import type { Store } from "../store/open-store.js";
import { presentationView, readPresentation } from "./hosted-options.js";
import { type CheckoutSession, getSession, saveCustomerDetails } from "./session-record.js";
import { sessionView } from "./session-view.js";
import { testPaymentsEnabled } from "./test-payment.js";

/**
 * The reads and writes of a session that its routes need (the partner's
 * `/v1/checkout/sessions`, the customer's `/v1/public/checkout`), so that route
 * files hold no SQL.
 */

/** A session as it is now (after a write of the caller's moved it). */
export const readSession = (store: Store, sessionId: string): Promise<CheckoutSession> => getSession(store, sessionId);

/** The customer's contact and delivery details, taken only while the session awaits payment. */
export async function recordCustomerDetails(
  store: Store,
  session: CheckoutSession,
  details: { contact: unknown; delivery?: unknown },
): Promise<CheckoutSession> {
  if (session.status !== "awaiting_payment") {
    throw new ProblemError({
      code: "session_not_open",
      title: "The session no longer takes details",
      detail: `The session is ${session.status}.`,
    });
  }
  if (session.shippingRequired && details.delivery === undefined) {
    throw problem("invalid_request", "delivery: this order ships, so a delivery address is required");
  }
  await saveCustomerDetails(store, {
    sessionId: session.id,
    contact: details.contact,
    delivery: details.delivery,
    now: Date.now(),
  });
  return readSession(store, session.id);
}

/** The session as the customer sees it: no partner metadata, the payment's progress, the certificate. */
export async function publicSessionView(context: AppContext, session: CheckoutSession) {
  const order = await getOrder(context.store, session.orderId);
  // The payment that pays (or paid) the session, if any; the certificate from its record.
  const payment = await paymentOfSession(context.store, { sessionId: session.id, statuses: ["pending", "settled", "attached"] });
  const certificate = await findCertificate(context.store, session.orderId);
  const presentation = presentationView(session.id, await readPresentation(context.store, session.id), null);
  const head = payment === undefined ? undefined : (await context.indexed.heads()).get(session.chainId)?.blockNumber;
  // A transfer submitted on this session that does not pay it (wrong amount, late): the customer is told what arrived.
  const unresolved = await unresolvedPaymentOfSession(context.store, session.id);
  return {
    ...sessionView(session, { orderId: order.id, purchaseId: order.purchaseId }),
    // The customer sees where to go and what they buy; the partner's metadata stays between partner and service.
    successUrl: presentation.successUrl,
    cancelUrl: presentation.cancelUrl,
    customer: presentation.customer,
    lineItems: presentation.lineItems,
    merchant: await readBranding(context.store, session.partnerId),
    // A recorded transfer is in a block, so at least 1, even when the cached head lags it.
    confirmations: payment === undefined ? null : shownConfirmations({ blockNumber: payment.blockNumber }, head),
    requiredConfirmations: networkByChainId(context, session.chainId)?.confirmations ?? null,
    unresolvedPayment:
      unresolved === undefined
        ? null
        : {
            transactionHash: unresolved.transactionHash,
            amount: unresolved.amount.toString(),
            expectedAmount: session.amountDue.toString(),
            reason: unresolved.reason,
            status: unresolved.status,
          },
    testPayments: await testPaymentsEnabled(context, session),
    transactionHash: payment?.transactionHash ?? null,
    contactProvided: session.contact !== null,
    deliveryProvided: session.delivery !== null,
    certificate: {
      enabled: session.certificateEnabled,
      status: certificate?.status ?? (session.certificateEnabled ? "awaiting_wallet" : "not_requested"),
      mintTransactionHash: certificate?.mintTransactionHash ?? null,
    },
    ...(await gaslessSessionView(context, session)),
    // The order's rewards the customer may claim (docs/rewards.md); ids for POST /v1/public/rewards/:id/claim.
    rewards: (await rewardsOfOrders(context.store, [session.orderId])).map(rewardView),
  };
}
