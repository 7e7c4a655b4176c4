import type { AppContext } from "../app-context.js";
import { findCertificate } from "../certificates/certificate-record.js";
import { sessionOfOrder } from "../checkout/session-record.js";
import { paymentView } from "../checkout/session-view.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { relayOfTransaction } from "../gasless/gasless-view.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import { findPartnerOrder } from "../orders/read-order.js";
import { paymentOfSession } from "../payments/payment-record.js";
import { refundSummariesOf } from "../refunds/refunds.js";
import { rewardsOfOrders } from "../rewards/reward-record.js";

/** Everything a partner needs to reconcile one order: amounts, the transfer, details and certificate. */
export async function readOrder(context: AppContext, params: { partnerId: string; orderId: string }) {
  const order = await findPartnerOrder(context.store, params);
  // Everything else depends on the order only: one round trip for all of it (and one more for a
  // gasless payment's relay, which is found by the payment's transaction).
  const [session, payment, certificate, rewards, heads, refundsOf] = await Promise.all([
    sessionOfOrder(context.store, order),
    order.settledSessionId === null
      ? undefined
      : paymentOfSession(context.store, { sessionId: order.settledSessionId, statuses: ["settled", "attached"] }),
    findCertificate(context.store, order.id),
    rewardsOfOrders(context.store, [order.id]),
    context.indexed.heads(),
    refundSummariesOf(context.store, [order.id]),
  ]);
  const relay =
    payment === undefined
      ? null
      : await relayOfTransaction(context.store, { chainId: payment.chainId, transactionHash: payment.transactionHash });
  const head = session ? heads.get(session.chainId)?.blockNumber : undefined;
  const refunds = refundsOf({ orderId: order.id, paid: payment?.amount ?? null });
  const network = session ? networkByChainId(context, session.chainId) : undefined;

  return {
    id: order.id,
    externalOrderId: order.externalOrderId,
    purchaseId: order.purchaseId,
    status: order.status,
    network: session?.network ?? null,
    chainId: session?.chainId ?? null,
    totalPriceUsdc: session?.totalPriceUsdc.toString() ?? null,
    amountPaid: payment?.amount.toString() ?? null,
    // Refunds (docs/refunds.md): succeeded, in progress, and none/partial/full.
    amountRefunded: refunds.amountRefunded,
    amountRefundPending: refunds.amountRefundPending,
    refundStatus: refunds.refundStatus,
    // The partner attached a transfer below the total and so accepted it (the same flag as purchase.settled's).
    underpaid: payment !== undefined && session !== undefined && payment.amount < session.totalPriceUsdc,
    session: session
      ? {
          id: session.id,
          status: session.status,
          expiresAt: new Date(session.expiresAt).toISOString(),
          payment: paymentView(session),
        }
      : null,
    payment: payment
      ? {
          transactionHash: payment.transactionHash,
          logIndex: payment.logIndex,
          blockNumber: payment.blockNumber.toString(),
          from: payment.from,
          to: payment.to,
          amount: payment.amount.toString(),
          confirmations: head === undefined ? null : confirmationsOf({ blockNumber: payment.blockNumber }, head),
          requiredConfirmations: network?.confirmations ?? null,
          minedAt: new Date(payment.minedAt).toISOString(),
          // A gasless payment: the relayed authorization and the gas it cost the service.
          relay,
        }
      : null,
    contact: session?.contact ?? null,
    delivery: session?.delivery ?? null,
    metadata: session?.metadata ?? {},
    certificate: {
      enabled: session?.certificateEnabled ?? false,
      status: certificate?.status ?? (session?.certificateEnabled ? "awaiting_wallet" : "not_requested"),
      contract: certificate?.contract ?? null,
      tokenId: certificate?.tokenId.toString() ?? null,
      owner: certificate?.buyer ?? null,
      mintTransactionHash: certificate?.mintTransactionHash ?? null,
    },
    rewardIds: rewards.map((reward) => reward.id),
    fulfilment:
      order.fulfilledAt !== null
        ? { reference: order.fulfilmentReference, fulfilledAt: new Date(order.fulfilledAt).toISOString() }
        : null,
    createdAt: new Date(order.createdAt).toISOString(),
    updatedAt: new Date(order.updatedAt).toISOString(),
  };
}
