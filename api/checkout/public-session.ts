import { ProblemError, problem } from "../http/problem.js";
import type { Store } from "../store/open-store.js";
import { type CheckoutSession, getSession, saveCustomerDetails } from "./session-record.js";

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
