import { HttpRequestError, TimeoutError } from "viem";
import { isStoreUnavailable } from "../store/store-availability.js";
import { type ProblemError, problem } from "./problem.js";

/** Seconds a client should wait before trying again after a 503 of ours. */
export const RETRY_AFTER_SECONDS = 5;

export const unavailableProblems = {
  store: () =>
    problem("store_unavailable", "The database is locked or unreachable; nothing was changed. Try again in a few seconds.", {
      retryAfterSeconds: RETRY_AFTER_SECONDS,
    }),
  rpc: () =>
    problem(
      "rpc_unavailable",
      "The service could not reach its node for this network in time; nothing was changed. Try again in a few seconds.",
      { retryAfterSeconds: RETRY_AFTER_SECONDS },
    ),
  index: () =>
    problem(
      "index_not_ready",
      "The indexer is restarting or backfilling and could not answer in time; nothing was changed. Try again in a few seconds.",
      { retryAfterSeconds: RETRY_AFTER_SECONDS },
    ),
};

/**
 * A read of the index that cannot be answered now: it did not answer within its bound
 * (the indexer busy with a backfill on the same embedded database), or the tables it
 * reads are not there yet (a fresh schema while Ponder creates it).
 */
export class IndexNotReadyError extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`the index is not ready: ${reason}`, options);
    this.name = "IndexNotReadyError";
  }
}

/** Postgres/PGlite codes of a relation or schema that does not exist (yet). */
const MISSING_RELATION_CODES = new Set(["42P01", "3F000"]);

export function isIndexNotReady(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 6; cause = cause.cause, depth++) {
    if (cause instanceof IndexNotReadyError) return true;
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && MISSING_RELATION_CODES.has(code)) return true;
  }
  return false;
}

/** A failure on the way to the chain node (timeout, refused, 502/503/504), not an answer from it. */
export function isRpcUnavailable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 6; cause = cause.cause, depth++) {
    if (cause instanceof TimeoutError) return true;
    if (cause instanceof HttpRequestError && (cause.status === undefined || [502, 503, 504].includes(cause.status))) return true;
  }
  return false;
}

/** The 503 problem an unexpected error stands for, if it is the store's or the node's absence. */
export function unavailableProblemFor(error: unknown): ProblemError | undefined {
  if (isStoreUnavailable(error)) return unavailableProblems.store();
  if (isRpcUnavailable(error)) return unavailableProblems.rpc();
  if (isIndexNotReady(error)) return unavailableProblems.index();
  return undefined;
}
