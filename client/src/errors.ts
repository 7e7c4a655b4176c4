/**
 * An RFC 9457 problem answered by the service. `code` is stable and safe to branch
 * on (`idempotency_conflict`, `session_expired`, `payment_not_found`, ...); `detail`
 * is for people. The full problem body stays in `problem` (e.g. `reason`, `errors`).
 */
export class SettlementApiError extends Error {
  override name = "SettlementApiError";
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly requestId: string | undefined;
  readonly problem: Record<string, unknown>;

  constructor(params: {
    status: number;
    code: string;
    title: string;
    detail: string;
    requestId?: string;
    problem?: Record<string, unknown>;
  }) {
    super(`${params.code} (${params.status}): ${params.detail}`);
    this.status = params.status;
    this.code = params.code;
    this.title = params.title;
    this.detail = params.detail;
    this.requestId = params.requestId;
    this.problem = params.problem ?? {};
  }
}

/** The service could not be reached, or did not answer in time; nothing is known about the outcome. */
export class SettlementConnectionError extends Error {
  override name = "SettlementConnectionError";
  readonly code = "connection_failed";

  // biome-ignore lint/complexity/noUselessConstructor: narrows Error's signature, a cause is always given
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}

/** A correctly signed body that is not an event envelope (never expected from the service). */
export class EventPayloadError extends Error {
  override name = "EventPayloadError";
  readonly code = "invalid_payload";
}
