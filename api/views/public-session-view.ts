import type { Address } from "viem";
import type { AppContext } from "../app-context.js";
import { findCertificate } from "../certificates/certificate-record.js";
import { presentationView, readPresentation } from "../checkout/hosted-options.js";
import type { CheckoutSession } from "../checkout/session-record.js";
import { sessionView } from "../checkout/session-view.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { gaslessSessionView } from "../gasless/gasless-view.js";
import { shownConfirmations } from "../indexed/confirmations.js";
import { getOrder } from "../orders/order-record.js";
import { readBranding } from "../partners/branding.js";
import { paymentOfSession, unresolvedPaymentOfSession } from "../payments/payment-record.js";
import { rewardsOfOrders } from "../rewards/reward-record.js";
import { rewardView } from "../rewards/reward-view.js";
import { testPaymentsEnabled } from "../settlement/test-payment.js";

/**
 * The session as the customer sees it: no partner metadata, the payment's progress, the certificate.
 * With the customer's connected wallet (`payer`), the typed data that wallet signs to pay without gas.
 */
export async function publicSessionView(context: AppContext, session: CheckoutSession, read: { payer?: Address } = {}) {
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
    ...(await gaslessSessionView(context, session, read.payer)),
    // The order's rewards the customer may claim (docs/rewards.md); ids for POST /v1/public/rewards/:id/claim.
    rewards: (await rewardsOfOrders(context.store, [session.orderId])).map(rewardView),
  };
}
