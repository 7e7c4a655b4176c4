import { PROBLEM_CODES, type ProblemCode, problemStatuses } from "./problem-catalogue.js";

/**
 * The OpenAPI side of the problem registry. Routes name the codes their domain can
 * answer with `errorResponses(...)`; `finishOpenApiDocument` adds the codes that the
 * mount around every route can answer (authentication, validation, body limits,
 * rate limits, the store and node being away), names each operation, tags it with
 * its audience and checks the result against the registry.
 */

type SchemaObject = Record<string, unknown>;
type ResponseObject = { description: string; content?: Record<string, { schema?: SchemaObject }>; headers?: unknown };
type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
  responses: Record<string, ResponseObject>;
  [extension: string]: unknown;
};
export type OpenApiDocument = {
  openapi: string;
  info: Record<string, unknown>;
  servers?: { url: string; description?: string }[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: Record<string, Record<string, unknown>>;
  [extension: string]: unknown;
};

const PROBLEM_JSON = "application/problem+json";
const STATUS_TEXT: Record<number, string> = {
  400: "The request is not valid",
  401: "Not authenticated",
  403: "Not allowed",
  404: "Not found",
  409: "The resource's state does not allow this",
  410: "Gone",
  413: "Too large",
  415: "Unsupported media type",
  422: "The request cannot be carried out as asked",
  429: "Too many requests",
  500: "Internal error",
  503: "Unavailable for now",
};

function problemSchema(codes: readonly ProblemCode[]): SchemaObject {
  return {
    allOf: [
      { $ref: "#/components/schemas/Problem" },
      { type: "object", properties: { code: { type: "string", enum: [...codes] } } },
    ],
  };
}

function problemResponse(status: number, codes: readonly ProblemCode[]): ResponseObject {
  const list = codes.map((code) => `\`${code}\``).join(", ");
  return {
    description: `${STATUS_TEXT[status] ?? "Problem"}: ${list} (see the problem catalogue)`,
    content: { [PROBLEM_JSON]: { schema: problemSchema(codes) } },
  };
}

/**
 * Problem+json responses for `codes`, grouped by the status each is registered with
 * (a code with several statuses appears under each), for a route's `responses`.
 */
export function errorResponses(...codes: ProblemCode[]): Record<number, ResponseObject> {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of codes) {
    for (const status of problemStatuses(code)) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries([...byStatus].map(([status, list]) => [status, problemResponse(status, list)]));
}

/** The codes an operation documents at `status` (none when it documents no problem there). */
export function documentedCodes(operation: Operation, status: number): string[] {
  const schema = operation.responses[String(status)]?.content?.[PROBLEM_JSON]?.schema as
    | { allOf?: { properties?: { code?: { enum?: string[] } } }[] }
    | undefined;
  return schema?.allOf?.[1]?.properties?.code?.enum ?? [];
}

export type Audience = "partner" | "browser" | "portals" | "service";

export const AUDIENCES: Record<Audience, { tag: string; description: string }> = {
  partner: {
    tag: "Partner API",
    description:
      "Called by a shop's server with `Authorization: Bearer <API key>`: checkout sessions, orders, payments, events and webhook endpoints, branding, members.",
  },
  browser: {
    tag: "Browser (hosted checkout)",
    description:
      "Called by the hosted checkout page and the checkout component in the customer's browser; the client token rides in the JSON body, never in a URL.",
  },
  portals: {
    tag: "Portals (console)",
    description:
      "The console's portals (partner members, investors, issuers, admins), signed in with a wallet (EIP-4361) and a portal session token.",
  },
  service: { tag: "Service", description: "Health of the service, for operators and load balancers." },
};

export function audienceOf(path: string): Audience {
  if (path === "/v1/health") return "service";
  if (path.startsWith("/v1/public/") || path.startsWith("/checkout/") || path.startsWith("/claim/")) return "browser";
  if (path.startsWith("/v1/")) return "partner";
  return "portals";
}

const SIGN_IN = /^\/api\/(investor|issuer|admin|partner)\/auth\//;
const RATE_LIMITED = [/^\/v1\/public\//, SIGN_IN, /^\/api\/rwa\/settlements\//, /^\/api\/verify\//];

/** What the mount around a route (middleware, validation, the app's error handler) can answer with. */
export function mountProblems(path: string, method: string, operation: Operation): ProblemCode[] {
  const codes: ProblemCode[] = ["internal_error", "store_unavailable", "rpc_unavailable", "index_not_ready"];
  const parameters = operation.parameters ?? [];
  if (parameters.length > 0 || operation.requestBody !== undefined) codes.push("invalid_request");
  if (method !== "get") codes.push("payload_too_large");
  if (parameters.some((parameter) => parameter.in === "path")) codes.push("not_found");
  if (parameters.some((parameter) => parameter.in === "query" && (parameter.name === "cursor" || parameter.name === "after")))
    codes.push("invalid_cursor");
  // What the admission of the route's declared callers answers (api/sign-in/admit-callers.ts).
  const requirements = (operation.security ?? []) as Record<string, string[]>[];
  const keyRoles = requirements.flatMap((requirement) => requirement.apiKey ?? []);
  const sessionRoles = requirements.flatMap((requirement) => requirement.portalSession ?? []);
  if (keyRoles.length + sessionRoles.length > 0) codes.push("unauthenticated");
  if (sessionRoles.length > 0) codes.push("wrong_portal", "portal_not_allowed");
  if (sessionRoles.some((role) => role === "partner-admin" || role === "issuer-as-partner")) codes.push("forbidden");
  // Read-only and auditor keys write nothing; an auditor's `partnerId=` names a partner that must exist (and a
  // partner's key only its own), or is asked for.
  if (keyRoles.length > 0 && method !== "get") codes.push("read_only_key");
  if (keyRoles.includes("auditor") && method === "get") codes.push("invalid_request", "not_found");
  // The operator's books: `partnerId=` names a partner that must exist.
  if (sessionRoles.includes("admin-books")) codes.push("not_found");
  if (RATE_LIMITED.some((pattern) => pattern.test(path))) codes.push("rate_limited");
  return codes;
}

function operationIdOf(method: string, path: string): string {
  const words = path
    .replace(/\{([^}]+)\}/g, "by-$1")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [method, ...words].map((word, index) => (index === 0 ? word : word[0]?.toUpperCase() + word.slice(1))).join("");
}

/**
 * Completes the generated document: operation ids, audience tags, public operations marked
 * as such, every problem the mount can answer, and the `Problem` schema from the registry.
 * Each operation's `security` is the route's own declaration of its callers (api/http/callers.ts).
 */
export function finishOpenApiDocument(raw: OpenApiDocument, publicBaseUrl: string | undefined): OpenApiDocument {
  const document: OpenApiDocument = structuredClone(raw);
  document.servers = [{ url: publicBaseUrl ?? "/", description: "This service" }];
  document.info = { ...document.info, license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" } };
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      operation.operationId = operationIdOf(method, path);
      // Routes that group themselves keep their tags; the audience is the document's split (`/openapi/<audience>.json`).
      operation.tags = operation.tags?.length ? operation.tags : [AUDIENCES[audienceOf(path)].tag];
      if (operation.security === undefined) operation.security = [];
      for (const code of mountProblems(path, method, operation)) addProblem(operation, code);
    }
  }
  // Each tag is described by the audience its operations belong to.
  const audienceOfTag = new Map<string, Audience>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const operation of Object.values(methods))
      for (const tag of operation.tags ?? []) audienceOfTag.set(tag, audienceOf(path));
  }
  document.tags = [...audienceOfTag].map(([name, audience]) => ({
    name,
    description:
      Object.values(AUDIENCES).find((candidate) => candidate.tag === name)?.description ?? AUDIENCES[audience].description,
  }));
  document.components = {
    ...document.components,
    schemas: {
      ...document.components?.schemas,
      Problem: {
        type: "object",
        description: "An RFC 9457 problem. `type` links to the code's entry in the problem catalogue at `/docs/problems`.",
        required: ["type", "title", "status", "detail", "code", "instance"],
        properties: {
          type: { type: "string", examples: ["/docs/problems#problem-session_expired"] },
          title: { type: "string" },
          status: { type: "integer" },
          detail: { type: "string" },
          code: { type: "string", enum: [...PROBLEM_CODES] },
          instance: { type: "string" },
          requestId: { type: "string" },
          errors: {
            type: "array",
            description: "`invalid_request`: each field that does not validate",
            items: {
              type: "object",
              properties: { path: { type: "string" }, message: { type: "string" } },
              required: ["path", "message"],
            },
          },
        },
      },
    },
  };
  return document;
}

function addProblem(operation: Operation, code: ProblemCode): void {
  for (const status of problemStatuses(code)) {
    const codes = documentedCodes(operation, status);
    if (codes.includes(code)) continue;
    const existing = operation.responses[String(status)];
    if (existing !== undefined && existing.content?.[PROBLEM_JSON] === undefined && existing.content !== undefined) continue;
    operation.responses[String(status)] = problemResponse(status, [...(codes as ProblemCode[]), code]);
  }
}

/** The operations of one audience, with only the components they use. */
export function audienceDocument(document: OpenApiDocument, audience: Audience): OpenApiDocument {
  const paths = Object.fromEntries(
    Object.entries(document.paths).filter(([path]) => audienceOf(path) === audience || audienceOf(path) === "service"),
  );
  const tag = AUDIENCES[audience];
  return {
    ...document,
    info: { ...document.info, title: `${document.info.title as string}: ${tag.tag}`, description: tag.description },
    tags: document.tags?.filter((candidate) =>
      Object.values(paths).some((methods) => Object.values(methods).some((op) => op.tags?.includes(candidate.name))),
    ),
    paths,
    // Events are sent to partners' servers: their `webhooks` belong to the partner document.
    webhooks: audience === "partner" ? document.webhooks : undefined,
  };
}
