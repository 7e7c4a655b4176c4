import type { Address } from "viem";
import type { AppContext } from "../app-context.js";
import { toCertificate } from "../certificates/certificate-record.js";
import { presentationView } from "../checkout/hosted-options.js";
import type { SessionSurroundings } from "../checkout/session-record.js";
import { sessionView } from "../checkout/session-view.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { gaslessViewOf } from "../gasless/gasless-view.js";
import { shownConfirmations } from "../indexed/confirmations.js";
import { toOrder } from "../orders/order-record.js";
import { brandingView } from "../partners/branding.js";
import { toPayment } from "../payments/payment-record.js";
import { toReward } from "../rewards/reward-record.js";
import { rewardView } from "../rewards/reward-view.js";
import { testPaymentsEnabled } from "../settlement/test-payment.js";

/**
 * The session as the customer sees it: no partner metadata, the payment's progress, the
 * certificate. Everything from the store comes read with the session in one query
 * (`sessionWithSurroundings`); the index's head and the chain's token domain are cached reads.
 * With the customer's connected wallet (`payer`), the typed data that wallet signs to pay without gas.
 */
export async function publicSessionView(context: AppContext, surroundings: SessionSurroundings, read: { payer?: Address } = {}) {
  const { session } = surroundings;
  const order = toOrder(surroundings.order);
  // The payment that pays (or paid) the session, if any; the certificate from its record.
  const payment = surroundings.payingPayment === undefined ? undefined : toPayment(surroundings.payingPayment);
  const certificate = surroundings.certificate === undefined ? undefined : toCertificate(surroundings.certificate);
  const presentation = presentationView(session.id, surroundings.presentation, null);
  // A transfer submitted on this session that does not pay it (wrong amount, late): the customer is told what arrived.
  const unresolved = surroundings.unresolvedPayment === undefined ? undefined : toPayment(surroundings.unresolvedPayment);
  const [head, testPayments, gasless] = await Promise.all([
    payment === undefined ? undefined : context.indexed.heads().then((heads) => heads.get(session.chainId)?.blockNumber),
    testPaymentsEnabled(context, session),
    gaslessViewOf(context, session, surroundings.latestRelay, read.payer),
  ]);
  return {
    ...sessionView(session, { orderId: order.id, purchaseId: order.purchaseId }),
    // The customer sees where to go and what they buy; the partner's metadata stays between partner and service.
    successUrl: presentation.successUrl,
    cancelUrl: presentation.cancelUrl,
    customer: presentation.customer,
    lineItems: presentation.lineItems,
    merchant: brandingView(session.partnerId, surroundings.partnerName, surroundings.branding),
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
    testPayments,
    transactionHash: payment?.transactionHash ?? null,
    contactProvided: session.contact !== null,
    deliveryProvided: session.delivery !== null,
    certificate: {
      enabled: session.certificateEnabled,
      status: certificate?.status ?? (session.certificateEnabled ? "awaiting_wallet" : "not_requested"),
      mintTransactionHash: certificate?.mintTransactionHash ?? null,
    },
    ...gasless,
    // The order's rewards the customer may claim (docs/rewards.md); ids for POST /v1/public/rewards/:id/claim.
    rewards: surroundings.rewards.map(toReward).map(rewardView),
  };
}
