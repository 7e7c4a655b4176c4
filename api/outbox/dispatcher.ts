import { randomInt } from "node:crypto";
import { SIGNATURE_HEADER, signPayload } from "../../client/src/signature.js";
import type { AppContext } from "../app-context.js";
import type { DispatcherOptions } from "../config/option-types.js";
import { logJson } from "../logging/redact.js";
import type { Store } from "../store/open-store.js";
import type { Worker } from "../workers/run-worker.js";
import { claimDueDeliveries, claimedDelivery, type DeliveryClaim, recordAttempt, releaseLease } from "./deliveries.js";
import type { SecretBox } from "./secret-box.js";
import { type SendOutcome, sendWebhook, USER_AGENT } from "./send-webhook.js";
import { signingSecrets } from "./webhook-endpoints.js";
import type { WebhookUrlPolicy } from "./webhook-url.js";

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
  const held = new Map<string, DeliveryClaim>();
  let allSettled: (() => void) | undefined;

  const deliverClaimed = (claim: DeliveryClaim) => {
    inFlight++;
    held.set(claim.id, claim);
    attemptDelivery(context.store, claim, { secretBox, policy, options })
      .catch((error) => logJson({ level: "error", msg: "webhook attempt failed", delivery: claim.id, error: String(error) }))
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
    for (const claim of held.values()) await releaseLease(context.store, claim);
  }

  return { name: DISPATCHER_NAME, intervalMs: options.pollIntervalMs, tick: pump, stop };
}

async function attemptDelivery(
  store: Store,
  claim: DeliveryClaim,
  deps: { secretBox: SecretBox; policy: WebhookUrlPolicy; options: DispatcherOptions },
): Promise<void> {
  const row = await claimedDelivery(store, claim);
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
  await store.transaction().execute((trx) =>
    recordAttempt(trx, {
      claim,
      endpointId: row.id,
      attemptCount: attempts,
      startedAt,
      result: {
        ok: outcome.ok,
        endpointDeleted: row.deleted_at !== null,
        finishedAt,
        deadline: Number(row.queued_at) + deps.options.retryWindowMs,
        retryDelayMs: retryDelayMs(attempts, deps.options),
      },
      outcome,
    }),
  );
}
