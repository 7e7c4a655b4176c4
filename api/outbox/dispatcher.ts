import { randomInt, randomUUID } from "node:crypto";
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import { SIGNATURE_HEADER, signPayload } from "../../client/src/signature.js";
import type { AppContext } from "../app-context.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { Worker } from "../workers/run-worker.js";
import type { SecretBox } from "./secret-box.js";
import { type SendOutcome, sendWebhook, USER_AGENT } from "./send-webhook.js";
import { signingSecrets } from "./webhook-endpoints.js";
import type { WebhookUrlPolicy } from "./webhook-url.js";

export type DispatcherOptions = {
  /** First retry waits up to this long; each further retry doubles the ceiling (full jitter). */
  retryBaseMs: number;
  /** Ceiling of one wait between attempts. */
  retryMaxDelayMs: number;
  /** A delivery is retried for at least this long after it was queued, then marked failed. */
  retryWindowMs: number;
  /** One attempt (DNS, connect, send, response) may take this long. */
  attemptTimeoutMs: number;
  /** Attempts in flight at once in one process. */
  concurrency: number;
  /** Attempts in flight at once to one endpoint, across every process (counted from the leases in the store). */
  perEndpointConcurrency: number;
  /** Attempts in flight at once to all endpoints of one partner, across every process. */
  perPartnerConcurrency: number;
  pollIntervalMs: number;
};

export const DISPATCHER_NAME = "webhook-dispatcher";

/** Exponential backoff with full jitter: a uniform wait in [0, min(max, base * 2^(failures-1))]. */
export function retryDelayMs(failures: number, options: Pick<DispatcherOptions, "retryBaseMs" | "retryMaxDelayMs">): number {
  const ceiling = Math.min(options.retryMaxDelayMs, options.retryBaseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return randomInt(0, Math.max(1, Math.floor(ceiling)) + 1);
}

/**
 * The webhook dispatcher: delivers every pending delivery at least once, in order
 * per (endpoint, ordering key), retrying with backoff for the retry window.
 *
 * Several processes may run it against one store. A delivery is claimed by a
 * guarded UPDATE that sets a lease (`locked_until`, `lock_token`) only if the row
 * is still pending and unleased; whoever updated the row owns the attempt (on
 * Postgres this plays the part of `FOR UPDATE SKIP LOCKED`). A process that dies
 * mid-attempt leaves a lease that simply runs out, and the delivery is tried again.
 * The row becomes `delivered` only after a 2xx arrived, so a crash can repeat a
 * delivery but never lose one.
 */
export function webhookDispatcher(
  context: Pick<AppContext, "store" | "settings" | "secretBox">,
  options: DispatcherOptions = context.settings.dispatcher,
): Worker {
  const { secretBox } = context;
  const policy: WebhookUrlPolicy = { localMode: context.settings.localMode };
  // An attempt is bounded by its timeout; the lease adds room for the store writes around it.
  const leaseMs = options.attemptTimeoutMs + 5_000;
  let inFlight = 0;
  let pumping = false;
  let pumpAgain = false;
  let stopping = false;
  /** Claims whose attempt is under way in this process: what a shutdown hands back. */
  const held = new Map<string, Claim>();
  let allSettled: (() => void) | undefined;

  const deliverClaimed = (claim: Claim) => {
    inFlight++;
    held.set(claim.id, claim);
    attemptDelivery(context.store, claim, { secretBox, policy, options })
      .catch((error) =>
        console.error(
          JSON.stringify({ level: "error", msg: "webhook attempt failed", delivery: claim.id, error: String(error) }),
        ),
      )
      .finally(() => {
        inFlight--;
        held.delete(claim.id);
        if (inFlight === 0) allSettled?.();
        // The next event of the same ordering key may be waiting on this one: go on now.
        void pump().catch(() => undefined);
      });
  };

  async function pump(): Promise<void> {
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        if (stopping) return;
        const room = options.concurrency - inFlight;
        if (room <= 0) return;
        const claims = await claimDueDeliveries(context.store, {
          limit: room,
          leaseMs,
          perEndpoint: options.perEndpointConcurrency,
          perPartner: options.perPartnerConcurrency,
        });
        for (const claim of claims) deliverClaimed(claim);
      } while (pumpAgain);
    } finally {
      pumping = false;
    }
  }

  /**
   * Shutdown: claim nothing more, let the attempts under way end until `deadline`,
   * then release the leases of those still running, so that the next process (or a
   * replica) retries them at once instead of after the lease ran out. An attempt cut
   * short may still have reached the receiver: delivery is at least once.
   */
  async function stop(deadline: number): Promise<void> {
    stopping = true;
    if (inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        allSettled = resolve;
        timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      });
      clearTimeout(timer);
    }
    for (const claim of held.values()) {
      await context.store
        .updateTable("webhook_delivery")
        .set({ locked_until: null, lock_token: null })
        .where("id", "=", claim.id)
        .where("lock_token", "=", claim.token)
        .execute();
    }
  }

  return { name: DISPATCHER_NAME, intervalMs: options.pollIntervalMs, tick: pump, stop };
}

type Claim = { id: string; token: string };

/** An earlier delivery of the same ordering key to the same endpoint is still pending. */
function earlierPending(eb: ExpressionBuilder<Database, "webhook_delivery">): Expression<SqlBool> {
  return eb.exists(
    eb
      .selectFrom("webhook_delivery as earlier")
      .select(sql<number>`1`.as("one"))
      .whereRef("earlier.endpoint_id", "=", "webhook_delivery.endpoint_id")
      .whereRef("earlier.ordering_key", "=", "webhook_delivery.ordering_key")
      .where("earlier.status", "=", "pending")
      .whereRef("earlier.event_seq", "<", "webhook_delivery.event_seq"),
  );
}

type Lane = { endpointId: string; partnerId: string; dueSince: number; room: number; granted: number };

/**
 * Claims due deliveries fairly. A delivery is due when it heads its (endpoint,
 * ordering key) line and its time has come. Slots go round-robin: one per partner
 * per round, and within a partner one per endpoint per round, never past the
 * per-endpoint and per-partner caps. The caps count the leases in the store, so
 * they hold across processes; a partner whose endpoints are slow or down can
 * therefore occupy at most `perPartner` slots, and every other partner's
 * deliveries keep going. Each delivery is then claimed with a guarded UPDATE; a
 * row another process claimed first is skipped.
 */
export async function claimDueDeliveries(
  store: Store,
  params: { limit: number; leaseMs: number; perEndpoint: number; perPartner: number },
): Promise<Claim[]> {
  const now = Date.now();
  const unleased = (eb: ExpressionBuilder<Database, "webhook_delivery">) =>
    eb.or([eb("webhook_delivery.locked_until", "is", null), eb("webhook_delivery.locked_until", "<", now)]);
  const dueLanes = await store
    .selectFrom("webhook_delivery")
    .select(["webhook_delivery.endpoint_id", "webhook_delivery.partner_id"])
    .select((eb) => eb.fn.min<number>("webhook_delivery.next_attempt_at").as("due_since"))
    .where("webhook_delivery.status", "=", "pending")
    .where("webhook_delivery.next_attempt_at", "<=", now)
    .where(unleased)
    .where((eb) => eb.not(earlierPending(eb)))
    .groupBy(["webhook_delivery.endpoint_id", "webhook_delivery.partner_id"])
    .orderBy("due_since")
    .limit(1000)
    .execute();
  if (dueLanes.length === 0) return [];

  const busy = await store
    .selectFrom("webhook_delivery")
    .select(["endpoint_id", "partner_id"])
    .select((eb) => eb.fn.countAll<number>().as("leased"))
    .where("status", "=", "pending")
    .where("locked_until", ">=", now)
    .groupBy(["endpoint_id", "partner_id"])
    .execute();
  const busyEndpoint = new Map<string, number>();
  const busyPartner = new Map<string, number>();
  for (const row of busy) {
    busyEndpoint.set(row.endpoint_id, (busyEndpoint.get(row.endpoint_id) ?? 0) + Number(row.leased));
    busyPartner.set(row.partner_id, (busyPartner.get(row.partner_id) ?? 0) + Number(row.leased));
  }

  // Partners in the order of their oldest due delivery; each with its endpoints in the same order.
  const partners = new Map<string, { room: number; lanes: Lane[]; next: number }>();
  for (const row of dueLanes) {
    let partner = partners.get(row.partner_id);
    if (partner === undefined) {
      partner = { room: params.perPartner - (busyPartner.get(row.partner_id) ?? 0), lanes: [], next: 0 };
      partners.set(row.partner_id, partner);
    }
    partner.lanes.push({
      endpointId: row.endpoint_id,
      partnerId: row.partner_id,
      dueSince: Number(row.due_since),
      room: params.perEndpoint - (busyEndpoint.get(row.endpoint_id) ?? 0),
      granted: 0,
    });
  }
  let slots = params.limit;
  for (let progress = true; slots > 0 && progress; ) {
    progress = false;
    for (const partner of partners.values()) {
      if (slots === 0) break;
      if (partner.room <= 0) continue;
      for (let tried = 0; tried < partner.lanes.length; tried++) {
        const lane = partner.lanes[partner.next % partner.lanes.length] as Lane;
        partner.next++;
        if (lane.granted >= lane.room) continue;
        lane.granted++;
        partner.room--;
        slots--;
        progress = true;
        break;
      }
    }
  }

  const claims: Claim[] = [];
  for (const partner of partners.values()) {
    for (const lane of partner.lanes) {
      if (lane.granted === 0) continue;
      const heads = await store
        .selectFrom("webhook_delivery")
        .select("webhook_delivery.id")
        .where("webhook_delivery.endpoint_id", "=", lane.endpointId)
        .where("webhook_delivery.status", "=", "pending")
        .where("webhook_delivery.next_attempt_at", "<=", now)
        .where(unleased)
        .where((eb) => eb.not(earlierPending(eb)))
        .orderBy("webhook_delivery.next_attempt_at")
        .orderBy("webhook_delivery.event_seq")
        .limit(lane.granted)
        .execute();
      for (const row of heads) {
        const token = randomUUID();
        const result = await store
          .updateTable("webhook_delivery")
          .set({ locked_until: now + params.leaseMs, lock_token: token })
          .where("webhook_delivery.id", "=", row.id)
          .where("webhook_delivery.status", "=", "pending")
          .where(unleased)
          .where((eb) => eb.not(earlierPending(eb)))
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) === 1) claims.push({ id: row.id, token });
      }
    }
  }
  return claims;
}

async function attemptDelivery(
  store: Store,
  claim: Claim,
  deps: { secretBox: SecretBox; policy: WebhookUrlPolicy; options: DispatcherOptions },
): Promise<void> {
  const row = await store
    .selectFrom("webhook_delivery")
    .innerJoin("event", "event.id", "webhook_delivery.event_id")
    .innerJoin("webhook_endpoint", "webhook_endpoint.id", "webhook_delivery.endpoint_id")
    .selectAll("webhook_endpoint")
    .select([
      "webhook_delivery.attempt_count",
      "webhook_delivery.queued_at",
      "event.id as event_id",
      "event.type as event_type",
      "event.payload as payload",
    ])
    .where("webhook_delivery.id", "=", claim.id)
    .where("webhook_delivery.lock_token", "=", claim.token)
    .executeTakeFirst();
  if (row === undefined) return;

  const startedAt = Date.now();
  let outcome: SendOutcome;
  let secrets: string[] | undefined;
  try {
    secrets = signingSecrets(row, deps.secretBox, startedAt);
  } catch {
    secrets = undefined;
  }
  if (row.deleted_at !== null) {
    outcome = { ok: false, statusCode: null, error: "the endpoint was deleted", responseExcerpt: null };
  } else if (secrets === undefined) {
    outcome = {
      ok: false,
      statusCode: null,
      error: "the signing secret cannot be decrypted with the configured SECRETS_KEY_FILE; rotate the endpoint's secret",
      responseExcerpt: null,
    };
  } else {
    const signature = signPayload({ payload: row.payload, secrets, timestamp: Math.floor(startedAt / 1000) });
    outcome = await sendWebhook({
      url: row.url,
      payload: row.payload,
      headers: {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        [SIGNATURE_HEADER]: signature,
        "Service-Event-Id": row.event_id,
        "Service-Event-Type": row.event_type,
      },
      policy: deps.policy,
      timeoutMs: deps.options.attemptTimeoutMs,
    });
  }
  const finishedAt = Date.now();
  const attempts = Number(row.attempt_count) + 1;
  const deadline = Number(row.queued_at) + deps.options.retryWindowMs;
  const next = outcome.ok
    ? { status: "delivered" as const, next_attempt_at: finishedAt, delivered_at: finishedAt }
    : row.deleted_at !== null
      ? { status: "cancelled" as const, next_attempt_at: finishedAt, delivered_at: null }
      : finishedAt >= deadline
        ? { status: "failed" as const, next_attempt_at: finishedAt, delivered_at: null }
        : {
            status: "pending" as const,
            // The last retry lands on the deadline, so retries span the whole window.
            next_attempt_at: Math.min(finishedAt + retryDelayMs(attempts, deps.options), deadline),
            delivered_at: null,
          };

  await store.transaction().execute(async (trx) => {
    // Every attempt is kept, even one whose lease ran out and was taken over.
    await trx
      .insertInto("webhook_delivery_attempt")
      .values({
        id: `wda_${randomUUID().replaceAll("-", "")}`,
        delivery_id: claim.id,
        started_at: startedAt,
        duration_ms: finishedAt - startedAt,
        status_code: outcome.statusCode,
        error: outcome.error,
        response_excerpt: outcome.responseExcerpt,
      })
      .execute();
    await trx
      .updateTable("webhook_delivery")
      .set({
        ...next,
        attempt_count: attempts,
        last_attempt_at: startedAt,
        last_status_code: outcome.statusCode,
        last_error: outcome.error,
        locked_until: null,
        lock_token: null,
        updated_at: finishedAt,
      })
      .where("id", "=", claim.id)
      .where("lock_token", "=", claim.token)
      .execute();
    // The endpoint answers again: its backoff is over for the whole queue. Deliveries
    // waiting out their own backoff from the outage go now instead of minutes later
    // (their order per ordering key still holds: only a line's head is ever claimed).
    if (outcome.ok) {
      await trx
        .updateTable("webhook_delivery")
        .set({ next_attempt_at: finishedAt, updated_at: finishedAt })
        .where("endpoint_id", "=", row.id)
        .where("status", "=", "pending")
        .where("next_attempt_at", ">", finishedAt)
        .execute();
    }
  });
}
