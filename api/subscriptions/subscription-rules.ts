/**
 * The pure rules of subscriptions (SPEC 18, docs/subscriptions.md): how long a period is, which
 * period the chain's clock is in, when a failed charge is tried again, and how much allowance the
 * customer's permit grants. Times here are Unix seconds, as the contract reads them.
 */

export const NAMED_INTERVALS = { day: 86_400, week: 7 * 86_400, month: 30 * 86_400, year: 365 * 86_400 } as const;
export type NamedInterval = keyof typeof NAMED_INTERVALS;

/** A custom period shorter than this would let a relayer spend the partner's gas budget on one customer. */
export const MIN_CUSTOM_PERIOD_SECONDS = 3_600;

/** The partner's `interval` as the record stores it (`day`…, or `custom`) and its length on chain. */
export function periodOf(interval: NamedInterval | { seconds: number }): { interval: string; periodSeconds: number } {
  if (typeof interval === "string") return { interval, periodSeconds: NAMED_INTERVALS[interval] };
  return { interval: "custom", periodSeconds: interval.seconds };
}

/** Periods a permit covers at most: the allowance a lost key could spend stays bounded. */
export const PERMIT_PERIODS = 12n;

/**
 * The permit's value: `amount` times the periods until `end`, at most `PERMIT_PERIODS`. A period
 * that starts before `end` is chargeable, so a partial last period counts.
 */
export function permitValueOf(terms: { amount: bigint; period: number; start: number; end: number }): bigint {
  const periods = BigInt(Math.ceil((terms.end - terms.start) / terms.period));
  return terms.amount * (periods < PERMIT_PERIODS ? periods : PERMIT_PERIODS);
}

/**
 * The period the chain's clock is in, as `charge(id)` computes it (`(now - start) / period`), or
 * undefined outside `[start, end)`, where the contract charges nothing.
 */
export function currentPeriodIndex(terms: { period: number; start: number; end: number }, chainNow: number): bigint | undefined {
  if (chainNow < terms.start || chainNow >= terms.end) return undefined;
  return BigInt(Math.floor((chainNow - terms.start) / terms.period));
}

/** When a period begins (Unix seconds). */
export function periodStart(terms: { period: number; start: number }, periodIndex: bigint): number {
  return terms.start + Number(periodIndex) * terms.period;
}

/**
 * When the next charge is due after the chain's `chainNow`: the start of the next period, or
 * undefined when that is at or past `end`.
 */
export function nextChargeAt(terms: { period: number; start: number; end: number }, chainNow: number): number | undefined {
  const index = chainNow < terms.start ? -1n : BigInt(Math.floor((chainNow - terms.start) / terms.period));
  const next = periodStart(terms, index + 1n);
  return next >= terms.end ? undefined : next;
}

/** Delays after a failed charge before it is tried again (SPEC 18); after the last failure the subscription is cancelled. */
export const RETRY_DELAYS_SECONDS = [3_600, 6 * 3_600, 24 * 3_600, 72 * 3_600] as const;

/**
 * Bounds of a partner's own retry schedule: at most eight retries, each from a minute (a local
 * walk, a test) to 30 days after the failure. An empty schedule cancels at the first failure.
 */
export const RETRY_SCHEDULE_LIMITS = { maxRetries: 8, minDelaySeconds: 60, maxDelaySeconds: 30 * 86_400 } as const;

/**
 * When a charge that failed for the `attempts`-th time is tried again (Unix seconds), or null
 * when the retries are spent (`retries_exhausted`).
 */
export function nextRetryAt(failedAt: number, attempts: number, delays: readonly number[] = RETRY_DELAYS_SECONDS): number | null {
  const delay = delays[attempts - 1];
  return delay === undefined ? null : failedAt + delay;
}

/**
 * Why a charge would fail, read before sending it: the customer's balance and the manager's
 * allowance. Undefined: it can go.
 */
export function shortfallOf(params: {
  amount: bigint;
  balance: bigint;
  allowance: bigint;
}): "insufficient_balance" | "insufficient_allowance" | undefined {
  if (params.balance < params.amount) return "insufficient_balance";
  if (params.allowance < params.amount) return "insufficient_allowance";
  return undefined;
}

/**
 * What becomes of a `pending` charge whose `Charged` the index does not hold, from what the chain
 * says of its transaction (`undefined`: the node did not answer, so nothing is known): reverted →
 * the charge fails (`reverted`); no receipt and not in the node's pool (dropped, or reorged away and
 * not re-included) → `due` again; mined, or still waiting in the pool → wait for the index.
 */
export function pendingChargeVerdict(chain: {
  receipt: "success" | "reverted" | null | undefined;
  inPool: boolean | undefined;
}): "wait" | "reverted" | "reopen" {
  if (chain.receipt === "reverted") return "reverted";
  if (chain.receipt === null && chain.inPool === false) return "reopen";
  return "wait";
}
