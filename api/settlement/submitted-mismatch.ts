import { isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import type { CheckoutSession } from "../checkout/session-record.js";
import type { NetworkConfig } from "../config/networks.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { findPayment, insertPayment, movePayment } from "../payments/payment-record.js";
import { decideTransfer, isPaymentTransfer, newPayment, recordUnresolvedEvent } from "./record-transfer.js";

/** Why a transfer a customer submitted on a session does not pay it (docs/hosted-checkout.md). */
export type SubmittedMismatchReason = "underpaid" | "overpaid";

/**
 * A customer submitted, on session S, a transfer to S's address whose amount is not
 * S's (an exchange deducted a fee, a typo): the money is on the partner's address,
 * so it becomes an unresolved payment linked to S (sessionId, orderId, expected
 * amount, `underpaid`/`overpaid`) and the partner hears `payment.unresolved`.
 * A transfer whose amount names another session is left to that session.
 * Answers whether the payment is now linked to S.
 */
export async function linkSubmittedMismatch(
  context: AppContext,
  params: { session: CheckoutSession; transfer: IndexedTransfer; network: NetworkConfig },
): Promise<boolean> {
  const { session, transfer, network } = params;
  if (!isAddressEqual(transfer.to, session.paymentAddress) || transfer.chainId !== session.chainId) return false;
  if (!isPaymentTransfer(transfer)) return false;
  const reason: SubmittedMismatchReason = transfer.value < session.amountDue ? "underpaid" : "overpaid";
  const now = Date.now();
  return context.store.transaction().execute(async (trx) => {
    const existing = await findPayment(trx, transfer);
    if (existing !== undefined) {
      if (existing.sessionId === session.id) return true;
      // Only a payment nobody could place is ours to link; a credited or linked one stays where it is.
      if (existing.status !== "unresolved" || existing.sessionId !== null || existing.reason !== "unmatched") return false;
      const linked = await movePayment(trx, {
        payment: existing,
        transition: "link_to_session",
        now,
        set: { sessionId: session.id, partnerId: session.partnerId, reason },
      });
      if (!linked) return false;
      // Reported again, now with the session it was meant for.
      await recordUnresolvedEvent(trx, {
        payment: { ...existing, sessionId: session.id, partnerId: session.partnerId, reason },
        session,
        network,
        now,
      });
      return true;
    }
    const decision = await decideTransfer(trx, transfer);
    if (decision.kind !== "unresolved" || decision.reason !== "unmatched") return false;
    const payment = newPayment(transfer, {
      partnerId: session.partnerId,
      sessionId: session.id,
      status: "unresolved",
      reason,
      now,
    });
    if (!(await insertPayment(trx, payment))) return false;
    await recordUnresolvedEvent(trx, { payment, session, network, now });
    return true;
  });
}
