import { LRUCache } from "lru-cache";
import type { AppContext } from "../app-context.js";
import { presentationView } from "../checkout/hosted-options.js";
import { type SessionSurroundings, sessionWithSurroundings } from "../checkout/session-record.js";
import { sessionView } from "../checkout/session-view.js";
import { gaslessViewOf } from "../gasless/gasless-view.js";
import { problems } from "../http/problem.js";
import { toOrder } from "../orders/order-record.js";
import type { Store } from "../store/open-store.js";

/** Final answers kept per process (docs/architecture.md, "The hot paths"). */
const CACHED_ANSWERS = 5_000;

type PartnerSessionAnswer = Awaited<ReturnType<typeof answerOf>>;

/** One cache per store, so that two stores in one process (tests) never share an answer. */
const caches = new WeakMap<Store, LRUCache<string, PartnerSessionAnswer>>();

function cacheOf(store: Store): LRUCache<string, PartnerSessionAnswer> {
  let cache = caches.get(store);
  if (cache === undefined) {
    cache = new LRUCache({ max: CACHED_ANSWERS });
    caches.set(store, cache);
  }
  return cache;
}

/**
 * Whether a session's partner answer can no longer change, the one definition of "final":
 * the session is settled, its order was credited by this very session (so no duplicate can
 * expire it), no payment of it is still confirming, and its latest relayed authorization, if
 * any, is mined (the one relay state nothing moves on from). Contact, delivery, metadata and
 * the hosted options do not change once a session leaves `awaiting_payment`.
 */
export function isFinalSession(surroundings: SessionSurroundings): boolean {
  const { session, order, payingPayment, latestRelay } = surroundings;
  return (
    session.status === "settled" &&
    order.settled_session_id === session.id &&
    payingPayment?.status !== "pending" &&
    (latestRelay === undefined || latestRelay.status === "mined")
  );
}

/**
 * The partner's read of one of its sessions (`GET /v1/checkout/sessions/{id}`): one query, and
 * a final answer from memory. The cache is keyed by partner AND session, so another partner's
 * read of the same id misses it and is refused as a session that does not exist.
 */
export async function partnerSessionView(context: AppContext, params: { partnerId: string; sessionId: string }) {
  const cache = cacheOf(context.store);
  const key = `${params.partnerId}\n${params.sessionId}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const surroundings = await sessionWithSurroundings(context.store, params);
  if (surroundings === undefined) throw problems.notFound(`Checkout session ${params.sessionId}`);
  const answer = await answerOf(context, surroundings);
  if (isFinalSession(surroundings)) cache.set(key, answer);
  return answer;
}

async function answerOf(context: AppContext, surroundings: SessionSurroundings) {
  const { session } = surroundings;
  const order = toOrder(surroundings.order);
  return {
    ...sessionView(session, { orderId: order.id, purchaseId: order.purchaseId }),
    ...presentationView(session.id, surroundings.presentation, session.metadata),
    ...(await gaslessViewOf(context, session, surroundings.latestRelay)),
  };
}
