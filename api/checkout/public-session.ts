import { ProblemError, problem } from "../http/problem.js";
import type { Store } from "../store/open-store.js";
import {
  type CheckoutSession,
  type SessionSurroundings,
  saveCustomerDetails,
  sessionWithSurroundings,
} from "./session-record.js";

/**
 * The reads and writes of a session that its routes need (the partner's
 * `/v1/checkout/sessions`, the customer's `/v1/public/checkout`), so that route
 * files hold no SQL.
 */

/** A session as it is now, with what the customer's view shows beside it (one query). */
export async function readSessionWithSurroundings(store: Store, sessionId: string): Promise<SessionSurroundings> {
  const found = await sessionWithSurroundings(store, { sessionId });
  if (found === undefined) throw new Error(`checkout session ${sessionId} not found`);
  return found;
}

/** The customer's contact and delivery details, taken only while the session awaits payment. */
export async function recordCustomerDetails(
  store: Store,
  session: CheckoutSession,
  details: { contact: unknown; delivery?: unknown },
): Promise<void> {
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
}
