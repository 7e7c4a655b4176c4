import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { PROBLEM_REGISTRY, type ProblemCode, problemStatuses } from "./problem-catalogue.js";

export type { ProblemCode } from "./problem-catalogue.js";

/**
 * An RFC 9457 problem with a stable machine-readable `code` from the registry in
 * `problem-catalogue.ts` (an unregistered code does not compile). Thrown anywhere in
 * a request; the app's error handler turns it into `application/problem+json`.
 * `status` and `title` default to the registry's; a status the registry does not
 * list for the code is a programming error and is refused here, so it surfaces as
 * a 500 in the contract test rather than as an undocumented answer.
 */
export class ProblemError extends Error {
  override name = "ProblemError";
  readonly status: ContentfulStatusCode;
  readonly code: ProblemCode;
  readonly title: string;
  readonly extensions: Record<string, unknown>;

  constructor(params: {
    code: ProblemCode;
    status?: ContentfulStatusCode;
    title?: string;
    detail?: string;
    extensions?: Record<string, unknown>;
  }) {
    const statuses = problemStatuses(params.code);
    const status = params.status ?? (statuses[0] as ContentfulStatusCode);
    if (!statuses.includes(status)) {
      throw new Error(`problem ${params.code} is registered with status ${statuses.join("/")}, not ${status}`);
    }
    const title = params.title ?? PROBLEM_REGISTRY[params.code].title;
    super(params.detail ?? title);
    this.status = status;
    this.code = params.code;
    this.title = title;
    this.extensions = params.extensions ?? {};
  }
}

/**
 * A problem raised by its code alone: status and title come from the registry, the
 * detail says what happened this time. (`new ProblemError({...})` remains for the few
 * places that answer a code with another registered status or a more specific title.)
 */
export function problem(code: ProblemCode, detail?: string, extensions?: Record<string, unknown>): ProblemError {
  return new ProblemError({ code, detail, extensions });
}

export const problems = {
  invalidRequest: (detail: string, errors?: { path: string; message: string }[]) =>
    new ProblemError({ code: "invalid_request", detail, extensions: errors ? { errors } : {} }),
  unauthenticated: (detail: string) => new ProblemError({ code: "unauthenticated", detail }),
  forbidden: (detail: string) => new ProblemError({ code: "forbidden", detail }),
  notFound: (what: string) => new ProblemError({ code: "not_found", detail: `${what} was not found` }),
};

/** Where a problem's `type` URI points: its entry in the catalogue page. */
export function problemTypeUri(code: ProblemCode): string {
  return `/docs/problems#problem-${code}`;
}

export function problemResponse(c: Context, problem: ProblemError): Response {
  // Extensions first: a problem's own members (RFC 9457 `status` is the HTTP status) cannot be replaced by one.
  const body = {
    ...problem.extensions,
    type: problemTypeUri(problem.code),
    title: problem.title,
    status: problem.status,
    detail: problem.message,
    code: problem.code,
    instance: c.req.path,
    requestId: c.get("requestId" as never) as string | undefined,
  };
  return c.body(JSON.stringify(body), problem.status, { "Content-Type": "application/problem+json" });
}
