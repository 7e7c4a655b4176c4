import { OpenAPIHono } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR } from "../../api/audit/audit-log.js";
import { registerIssuer } from "../../api/compliance/issuers.js";
import { admit, assertEveryRouteDeclared, CALLERS, type Callers, declarationOf } from "../../api/http/callers.js";
import { issueApiKey, issueAuditorKey } from "../../api/partners/api-keys.js";
import { addMember } from "../../api/partners/members.js";
import { createPartnerWithKey } from "../../api/partners/partner-admin.js";
import { createPortalSession } from "../../api/sign-in/portal-sessions.js";
import type { PortalRole } from "../../api/store/portal-tables.js";
import { createAppWithoutChain } from "../../scripts/openapi-document.js";

// Who may call a route is the route's own declaration (api/http/callers.ts), enforced by the
// middleware the route carries. Read here from the real app on a real SQLite store, with real
// keys and sessions, and no chain: every refusal happens before a handler reads the index.

const ADMIN = "0x00000000000000000000000000000000000000ad";
const INVESTOR = "0x00000000000000000000000000000000000000b1";
const ISSUER = "0x00000000000000000000000000000000000000c1";
const MEMBER = "0x00000000000000000000000000000000000000d1";
const MEMBER_ADMIN = "0x00000000000000000000000000000000000000d2";

type Service = Awaited<ReturnType<typeof createAppWithoutChain>>;
type DocumentRoute = { method: string; path: string; security: Callers | undefined };

let service: Service;
const credentials: Record<string, string> = {};
let partnerId: string;
let documentRoutes: DocumentRoute[];

beforeAll(async () => {
  service = await createAppWithoutChain({ ADMIN_ADDRESSES: ADMIN });
  const { store } = service.context;
  const { partner, key } = await createPartnerWithKey(store, OPERATOR, { name: "Callers shop", mode: "test" });
  partnerId = partner.id;
  credentials.full = key.apiKey;
  credentials.read = (await issueApiKey(store, { partnerId, mode: "test", scope: "read" })).apiKey;
  credentials.auditor = (await issueAuditorKey(store, { mode: "test" })).apiKey;
  credentials.otherPartner = (await createPartnerWithKey(store, OPERATOR, { name: "Another shop", mode: "test" })).key.apiKey;
  await addMember(store, OPERATOR, { partnerId, address: MEMBER, role: "member" });
  await addMember(store, OPERATOR, { partnerId, address: MEMBER_ADMIN, role: "admin" });
  await registerIssuer(store, OPERATOR, { address: ISSUER, name: "Callers issuer" });
  const session = async (role: PortalRole, address: string) =>
    (await createPortalSession(store, { role, address, ttlSeconds: 600, now: Date.now() })).token;
  credentials.admin = await session("admin", ADMIN);
  credentials.investor = await session("investor", INVESTOR);
  credentials.issuer = await session("issuer", ISSUER);
  credentials.member = await session("partner", MEMBER);
  credentials.memberAdmin = await session("partner", MEMBER_ADMIN);
  const document = (await (await call("GET", "/openapi.json")).json()) as {
    paths: Record<string, Record<string, { security?: Callers }>>;
  };
  documentRoutes = Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      security: operation.security,
    })),
  );
});

afterAll(async () => {
  await service.close();
});

/** A concrete path for a documented one: every parameter a made-up value. */
function concrete(path: string): string {
  return path
    .replace(/\{chainId\}/g, "31337")
    .replace(/\{logIndex\}/g, "0")
    .replace(/\{[^}]+\}/g, "x1");
}

async function call(method: string, path: string, token?: string, headers: Record<string, string> = {}) {
  return service.app.request(path, {
    method,
    headers: {
      Host: "127.0.0.1",
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
      ...(method === "GET" || method === "HEAD" ? {} : { "Content-Type": "application/json" }),
      ...headers,
    },
    ...(method === "GET" || method === "HEAD" ? {} : { body: "{}" }),
  });
}

async function codeOf(response: Response): Promise<string | undefined> {
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("json")) return undefined;
  return ((await response.json()) as { code?: string }).code;
}

/** The declared routes of the document that admit some callers (not public ones). */
const guarded = () => documentRoutes.filter((route) => (route.security?.length ?? 0) > 0);
const admits = (route: DocumentRoute, scheme: "apiKey" | "portalSession", role: string) =>
  (route.security ?? []).some((requirement) => (requirement as Record<string, string[]>)[scheme]?.includes(role));

describe("every route declares who may call it", () => {
  it("has a declaration on every route of the app, and the document states exactly it", () => {
    expect(() => assertEveryRouteDeclared(service.app.routes)).not.toThrow();
    const declared = new Map<string, Callers>();
    for (const route of service.app.routes) {
      const callers = declarationOf(route.handler);
      if (callers !== undefined) declared.set(`${route.method} ${route.path.replace(/:([^/]+)/g, "{$1}")}`, callers);
    }
    expect(documentRoutes.length).toBeGreaterThan(150);
    for (const route of documentRoutes) {
      expect({ route: `${route.method} ${route.path}`, security: route.security }).toEqual({
        route: `${route.method} ${route.path}`,
        security: declared.get(`${route.method} ${route.path}`),
      });
    }
  });

  it("refuses to build an app with a route that declares nothing", () => {
    const app = new OpenAPIHono();
    app.get("/declared", admit(CALLERS.anyone), (c) => c.text("ok"));
    app.get("/forgotten", (c) => c.text("open"));
    expect(() => assertEveryRouteDeclared(app.routes)).toThrow(/GET \/forgotten/);
    expect(() => assertEveryRouteDeclared(app.routes.filter((route) => route.path !== "/forgotten"))).not.toThrow();
  });

  it("admits the same callers under /v1 and under the console's /api/partner for a router mounted at both", () => {
    const byPath = new Map(documentRoutes.map((route) => [`${route.method} ${route.path}`, route.security]));
    // The console's key screen (`/api/partner/api-keys`) is a router of its own, not the partner API's `/v1/api-keys`.
    const mirrored = documentRoutes.filter(
      (route) =>
        route.path.startsWith("/api/partner/") &&
        !route.path.startsWith("/api/partner/api-keys") &&
        byPath.has(`${route.method} ${route.path.replace("/api/partner/", "/v1/")}`),
    );
    expect(mirrored.length).toBeGreaterThan(40);
    for (const route of mirrored) {
      const v1 = `${route.method} ${route.path.replace("/api/partner/", "/v1/")}`;
      expect({ v1, security: byPath.get(v1) }).toEqual({ v1, security: route.security });
    }
  });
});

describe("the one admission middleware", () => {
  it("answers 401 with a challenge to an anonymous caller on every guarded route", async () => {
    const routes = guarded();
    expect(routes.length).toBeGreaterThan(150);
    for (const route of routes) {
      const response = await call(route.method, concrete(route.path));
      const found = { route: `${route.method} ${route.path}`, status: response.status, code: await codeOf(response) };
      expect(found).toEqual({ route: found.route, status: 401, code: "unauthenticated" });
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer realm="/);
    }
  });

  it("answers 401 invalid_token to a made-up key or session", async () => {
    for (const route of guarded()) {
      for (const token of ["sk_test_madeup", "pst_madeup"]) {
        const response = await call(route.method, concrete(route.path), token);
        expect({ route: `${route.method} ${route.path}`, status: response.status }).toEqual({
          route: `${route.method} ${route.path}`,
          status: 401,
        });
        expect(response.headers.get("www-authenticate")).toContain('error="invalid_token"');
      }
    }
  });

  it("refuses read-only and auditor keys on every change with 403 read_only_key", async () => {
    // Closing a period is the one change a read-only key makes (`read-change`); its own test is below.
    const changes = guarded().filter(
      (route) => route.method !== "GET" && admits(route, "apiKey", "full") && !admits(route, "apiKey", "read-change"),
    );
    expect(changes.length).toBeGreaterThan(20);
    for (const route of changes) {
      for (const kind of ["read", "auditor"]) {
        const response = await call(route.method, `${concrete(route.path)}?partnerId=${partnerId}`, credentials[kind]);
        const found = { route: `${route.method} ${route.path}`, kind, status: response.status, code: await codeOf(response) };
        expect(found).toEqual({ ...found, status: 403, code: "read_only_key" });
      }
    }
  });

  it("refuses a session of another portal with 403 wrong_portal on every route that admits only sessions", async () => {
    const sessionOnly = guarded().filter((route) => !(route.security ?? []).some((requirement) => "apiKey" in requirement));
    const portalOf = (role: string) =>
      ({ "partner-admin": "partner", "issuer-as-partner": "issuer", "admin-books": "admin" })[role] ?? role;
    const tokenOf: Record<string, string> = {
      investor: "investor",
      issuer: "issuer",
      admin: "admin",
      partner: "memberAdmin",
    };
    for (const route of sessionOnly) {
      const admitted = new Set(
        (route.security ?? []).flatMap((requirement) =>
          ((requirement as { portalSession?: string[] }).portalSession ?? []).map(portalOf),
        ),
      );
      for (const portal of Object.keys(tokenOf).filter((name) => !admitted.has(name))) {
        const response = await call(route.method, concrete(route.path), credentials[tokenOf[portal] as string]);
        const found = { route: `${route.method} ${route.path}`, portal, status: response.status, code: await codeOf(response) };
        expect(found).toEqual({ ...found, status: 403, code: "wrong_portal" });
      }
    }
  });

  it("refuses a console member whose role is member on a change that needs an admin member", async () => {
    const adminChanges = guarded().filter(
      (route) => admits(route, "portalSession", "partner-admin") && !admits(route, "portalSession", "partner"),
    );
    expect(adminChanges.length).toBeGreaterThan(10);
    for (const route of adminChanges) {
      const response = await call(route.method, concrete(route.path), credentials.member);
      const found = { route: `${route.method} ${route.path}`, status: response.status, code: await codeOf(response) };
      expect(found).toEqual({ ...found, status: 403, code: "forbidden" });
    }
  });

  it("lets a read-only key close a period (its only change), never an auditor key", async () => {
    const readChanges = guarded().filter((route) => admits(route, "apiKey", "read-change"));
    expect(readChanges.map((route) => `${route.method} ${route.path}`)).toEqual(["POST /v1/reports/periods"]);
    const auditor = await call("POST", `/v1/reports/periods?partnerId=${partnerId}`, credentials.auditor);
    expect({ status: auditor.status, code: await codeOf(auditor) }).toEqual({ status: 403, code: "read_only_key" });
    // Admitted: the empty range is then refused (invalid_range), which no refused caller reaches.
    const read = await call("POST", "/v1/reports/periods", credentials.read);
    expect({ status: read.status, code: await codeOf(read) }).toEqual({ status: 400, code: "invalid_range" });
  });

  it("lets a partner's key read its own books only, and an auditor name the partner", async () => {
    const other = await call("GET", `/v1/events?partnerId=${partnerId}`, credentials.otherPartner);
    expect({ status: other.status, code: await codeOf(other) }).toEqual({ status: 404, code: "not_found" });
    const unnamed = await call("GET", "/v1/events", credentials.auditor);
    expect({ status: unnamed.status, code: await codeOf(unnamed) }).toEqual({ status: 400, code: "invalid_request" });
    const named = await call("GET", `/v1/events?partnerId=${partnerId}`, credentials.auditor);
    expect(named.status).toBe(200);
    const member = await call("GET", "/api/partner/events", credentials.member);
    expect(member.status).toBe(200);
  });

  it("keeps the console's routes, the books and the issuer's refunds apart from the roles they are not for", async () => {
    // The same handlers, declared for another audience under another prefix.
    for (const [path, token] of [
      ["/api/partner/ledger?fromBlock=1&toBlock=2", credentials.admin],
      ["/api/partner/refunds", credentials.issuer],
      ["/api/issuer/refunds", credentials.memberAdmin],
      ["/api/admin/ledger?fromBlock=1&toBlock=2", credentials.memberAdmin],
    ] as const) {
      const response = await call("GET", path, token);
      expect({ path, status: response.status, code: await codeOf(response) }).toEqual({
        path,
        status: 403,
        code: "wrong_portal",
      });
    }
    // The operator's books admit an admin's session only: a partner's key is no session there.
    const keyOnOperatorBooks = await call("GET", "/api/admin/ledger?fromBlock=1&toBlock=2", credentials.full);
    expect({ status: keyOnOperatorBooks.status, code: await codeOf(keyOnOperatorBooks) }).toEqual({
      status: 401,
      code: "unauthenticated",
    });
  });
});
