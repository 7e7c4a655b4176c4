import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../app-context.js";
import { findCertificate } from "../certificates/certificate-record.js";
import { gaslessSessionView } from "../gasless/gasless-view.js";
import { ProblemError } from "../http/problem.js";
import { shownConfirmations } from "../indexed/confirmations.js";
import { readBranding } from "../partners/branding.js";
import type { CheckoutSessionTable } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import { presentationView, readPresentation } from "./hosted-options.js";
import { getSession, saveCustomerDetails } from "./session-record.js";
import { sessionView } from "./session-view.js";
import { testPaymentsEnabled } from "./test-payment.js";

/**
 * The reads and writes of a session that its routes need (the partner's
 * `/v1/checkout/sessions`, the customer's `/v1/public/checkout`), so that route
 * files hold no SQL.
 */

/** A session as it is now (after a write of the caller's moved it). */
export const readSession = (store: Store, sessionId: string): Promise<CheckoutSessionTable> => getSession(store, sessionId);

/** The customer's contact and delivery details, taken only while the session awaits payment. */
export async function recordCustomerDetails(
  store: Store,
  session: CheckoutSessionTable,
  details: { contact: unknown; delivery?: unknown },
): Promise<CheckoutSessionTable> {
  if (session.status !== "awaiting_payment") {
    throw new ProblemError({
      status: 409,
      code: "session_not_open",
      title: "The session no longer takes details",
      detail: `The session is ${session.status}.`,
    });
  }
  if (session.shipping_required === 1 && details.delivery === undefined) {
    throw new ProblemError({
      status: 400,
      code: "invalid_request",
      title: "The request is not valid",
      detail: "delivery: this order ships, so a delivery address is required",
    });
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
export async function publicSessionView(context: AppContext, session: CheckoutSessionTable) {
  // The order with the session's credited payment in one round trip; the certificate from its record.
  const row = await context.store
    .selectFrom("orders")
    .leftJoin("payment", (join) =>
      join.on("payment.session_id", "=", session.id).on("payment.status", "in", ["pending", "settled", "attached"]),
    )
    .select(["orders.id as order_id", "orders.purchase_id", "payment.transaction_hash", "payment.block_number"])
    .where("orders.id", "=", session.order_id)
    .executeTakeFirstOrThrow();
  const certificate = await findCertificate(context.store, session.order_id);
  const presentation = presentationView(session.id, await readPresentation(context.store, session.id), null);
  const head = row.block_number == null ? undefined : (await context.indexed.heads()).get(session.chain_id)?.blockNumber;
  // A transfer submitted on this session that does not pay it (wrong amount, late): the customer is told what arrived.
  const unresolved = await context.store
    .selectFrom("payment")
    .select(["transaction_hash", "amount", "reason", "status"])
    .where("session_id", "=", session.id)
    .where("status", "in", ["unresolved", "refund_requested"])
    .orderBy("created_at", "desc")
    .executeTakeFirst();
  return {
    ...sessionView(session, { orderId: row.order_id, purchaseId: row.purchase_id }),
    // The customer sees where to go and what they buy; the partner's metadata stays between partner and service.
    successUrl: presentation.successUrl,
    cancelUrl: presentation.cancelUrl,
    customer: presentation.customer,
    lineItems: presentation.lineItems,
    merchant: await readBranding(context.store, session.partner_id),
    // A recorded transfer is in a block, so at least 1, even when the cached head lags it.
    confirmations: row.block_number == null ? null : shownConfirmations({ blockNumber: BigInt(row.block_number) }, head),
    requiredConfirmations: networkByChainId(context, session.chain_id)?.confirmations ?? null,
    unresolvedPayment:
      unresolved === undefined
        ? null
        : {
            transactionHash: unresolved.transaction_hash,
            amount: unresolved.amount,
            expectedAmount: session.amount_due,
            reason: unresolved.reason,
            status: unresolved.status,
          },
    testPayments: testPaymentsEnabled(context, session),
    transactionHash: row.transaction_hash ?? null,
    contactProvided: session.contact_json !== null,
    deliveryProvided: session.delivery_json !== null,
    certificate: {
      enabled: session.certificate_enabled === 1,
      status: certificate?.status ?? (session.certificate_enabled === 1 ? "awaiting_wallet" : "not_requested"),
      mintTransactionHash: certificate?.mintTransactionHash ?? null,
    },
    ...(await gaslessSessionView(context, session)),
  };
}
