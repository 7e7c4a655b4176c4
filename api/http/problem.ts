import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * An RFC 9457 problem with a stable machine-readable `code`. Thrown anywhere in a
 * request; the app's error handler turns it into `application/problem+json`.
 */
export class ProblemError extends Error {
  override name = "ProblemError";
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly title: string;
  readonly extensions: Record<string, unknown>;

  constructor(params: {
    status: ContentfulStatusCode;
    code: string;
    title: string;
    detail?: string;
    extensions?: Record<string, unknown>;
  }) {
    super(params.detail ?? params.title);
    this.status = params.status;
    this.code = params.code;
    this.title = params.title;
    this.extensions = params.extensions ?? {};
  }
}

export const problems = {
  invalidRequest: (detail: string, errors?: { path: string; message: string }[]) =>
    new ProblemError({
      status: 400,
      code: "invalid_request",
      title: "The request is not valid",
      detail,
      extensions: errors ? { errors } : {},
    }),
  unauthenticated: (detail: string) =>
    new ProblemError({ status: 401, code: "unauthenticated", title: "Authentication is required", detail }),
  forbidden: (detail: string) => new ProblemError({ status: 403, code: "forbidden", title: "Not allowed", detail }),
  notFound: (what: string) =>
    new ProblemError({ status: 404, code: "not_found", title: "Not found", detail: `${what} was not found` }),
};

export function problemResponse(c: Context, problem: ProblemError): Response {
  const body = {
    type: `/docs#problem-${problem.code}`,
    title: problem.title,
    status: problem.status,
    detail: problem.message,
    code: problem.code,
    instance: c.req.path,
    requestId: c.get("requestId" as never) as string | undefined,
    ...problem.extensions,
  };
  return c.body(JSON.stringify(body), problem.status, { "Content-Type": "application/problem+json" });
}
