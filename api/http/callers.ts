import { createRoute } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { problem } from "./problem.js";

/**
 * Who may call a route, said once beside the route (docs/http-conventions.md, "Who may call a
 * route"). A route's declaration is its OpenAPI `security`: a list of alternatives, each one
 * scheme with the roles it admits (OpenAPI 3.1 lets a requirement list roles for any scheme).
 * The one admission middleware (`admit`, put on the route by `declareRoute`) reads that same
 * object, so the published document and the enforcement cannot differ, and mounting a router
 * under a second prefix changes nothing about who may call it. An empty list is a public route
 * (a page, a sign-in, or a browser call whose body carries a client token the handler checks).
 */
export type ApiKeyRole =
  /** A partner's full key (`sk_…`). */
  | "full"
  /** A partner's read-only key (`rk_…`), on a read. */
  | "read"
  /** A partner's read-only key on this change too: closing a period is its accountant's act. */
  | "read-change"
  /** A platform auditor key (`ak_…`) naming the partner with `partnerId=`. */
  | "auditor"
  /** With `auditor`: an auditor key without `partnerId=` reads every partner (the books). */
  | "all-partners";

export type SessionRole =
  | "investor"
  | "issuer"
  | "admin"
  /** A console member of the partner it acts for, any role. */
  | "partner"
  /** A console member whose role is `admin` (changes keys, members, endpoints, branding, rewards). */
  | "partner-admin"
  /** An issuer's session acting as the issuer's own partner (its RWA refunds). */
  | "issuer-as-partner"
  /** An admin's session reading every partner's books (`partnerId=` narrows to one). */
  | "admin-books";

export type CallerRequirement = { apiKey: ApiKeyRole[] } | { portalSession: SessionRole[] };
export type Callers = readonly CallerRequirement[];

const key = (...roles: ApiKeyRole[]): CallerRequirement => ({ apiKey: roles });
const session = (...roles: SessionRole[]): CallerRequirement => ({ portalSession: roles });
/** Every key of a partner may read: full, read-only, and an auditor naming the partner. */
const anyKey = key("full", "read", "auditor");

/** The declarations routes choose from; each name says who is admitted. */
export const CALLERS = {
  anyone: [],
  /** A partner's reads: any of its keys, or any console member. */
  partnerRead: [anyKey, session("partner")],
  /** A partner's daily work (sessions, orders, payments, refunds, events): its full key, or any console member. */
  partnerChange: [key("full"), session("partner")],
  /** A change of who acts for the partner or where its money and events go: its full key, or a console admin member. */
  partnerAdminChange: [key("full"), session("partner-admin")],
  /** The API only (no console screen): any key of the partner. */
  keyRead: [anyKey],
  /** The API only: the partner's full key. */
  keyChange: [key("full")],
  /** The books: a partner's keys and members, and an auditor key across every partner without `partnerId=`. */
  booksRead: [key("full", "read", "auditor", "all-partners"), session("partner")],
  /** The operator's books (`/api/admin/...`): an admin's session, across partners or one named by `partnerId=`. */
  operatorBooks: [session("admin-books")],
  /** The issuer portal's refunds (`/api/issuer/refunds`): an issuer's session, acting as its own partner. */
  issuerAsPartner: [session("issuer-as-partner")],
  /** Closing a period of the books (SPEC 17.1): the partner's full or read-only key, or a member; never an auditor. */
  periodClose: [key("full", "read-change"), session("partner")],
  /** The console's partner portal only: any member. */
  member: [session("partner")],
  /** The console's partner portal only: an admin member. */
  memberAdmin: [session("partner-admin")],
  investor: [session("investor")],
  issuer: [session("issuer")],
  admin: [session("admin")],
} as const satisfies Record<string, Callers>;

/**
 * What authenticates a caller against a declaration: built once per app from the store
 * (api/sign-in/admit-callers.ts) and handed to every request by `provideAdmission`, so
 * this module, below the sign-in folder, never imports it.
 */
export type Admission = (c: Context, callers: Callers) => Promise<void>;

const ADMISSION = "admission" as never;
/** The middleware Hono wrapped a sub-app's handler around keeps the original here. */
const COMPOSED_HANDLER = "__COMPOSED_HANDLER";

/** Marks the middleware that enforces a declaration (the completeness check finds it on every route). */
export const ADMITS = Symbol("admits");

export type AdmitMiddleware = MiddlewareHandler & { [ADMITS]: Callers };

export function provideAdmission(admission: Admission): MiddlewareHandler {
  return createMiddleware(async (c, next) => {
    c.set(ADMISSION, admission as never);
    await next();
  });
}

/**
 * Admits a caller any of several declarations admits (a public one admits everyone): what a
 * request for an unknown path or method under some routes must show before it learns so.
 */
export async function admitAnyOf(c: Context, declarations: readonly Callers[]): Promise<void> {
  if (declarations.length === 0 || declarations.some((callers) => callers.length === 0)) return;
  const admission = c.get(ADMISSION) as Admission | undefined;
  if (admission === undefined) throw problem("internal_error", "This route's callers cannot be checked.");
  await admission(c, declarations.flat());
}

/** The declaration a route's handler carries, if it is the admission middleware. */
export function declarationOf(handler: unknown): Callers | undefined {
  const original = ((handler as { [COMPOSED_HANDLER]?: unknown })[COMPOSED_HANDLER] ?? handler) as Partial<AdmitMiddleware>;
  return original[ADMITS];
}

/** The middleware that admits exactly the callers `callers` declares (a public route: everyone). */
export function admit(callers: Callers): AdmitMiddleware {
  const middleware = createMiddleware(async (c, next) => {
    if (callers.length > 0) {
      const admission = c.get(ADMISSION) as Admission | undefined;
      // A router mounted without the app's admission refuses rather than opens.
      if (admission === undefined) throw problem("internal_error", "This route's callers cannot be checked.");
      await admission(c, callers);
    }
    await next();
  }) as AdmitMiddleware;
  middleware[ADMITS] = callers;
  return middleware;
}

/**
 * The same route for another audience, under another prefix: its own declaration and the
 * admission that enforces it (the refunds for an issuer, the books for an admin).
 */
export function declaredFor<route extends { security?: unknown; middleware?: unknown }>(route: route, callers: Callers): route {
  return { ...route, security: callers, middleware: admit(callers) };
}

type RouteConfig = Parameters<typeof createRoute>[0];

/**
 * `createRoute` with the route's callers declared: `security` is required, and the route
 * carries the middleware that enforces it, ahead of its validators.
 */
export function declareRoute<config extends Omit<RouteConfig, "security" | "middleware"> & { security: Callers }>(
  config: config,
) {
  return createRoute({
    ...config,
    security: config.security as unknown as { [name: string]: string[] }[],
    middleware: admit(config.security),
  });
}

type RegisteredRoute = { method: string; path: string; handler: unknown };

/**
 * The routes (`METHOD path`) of an app that carry no declaration of their callers. Middleware
 * (`ALL`) is no route; every other handler must sit behind an `admit` of its own.
 */
export function undeclaredRoutes(routes: readonly RegisteredRoute[]): string[] {
  const all = new Set<string>();
  const declared = new Set<string>();
  for (const route of routes) {
    if (route.method === "ALL") continue;
    const name = `${route.method} ${route.path}`;
    all.add(name);
    if (declarationOf(route.handler) !== undefined) declared.add(name);
  }
  return [...all].filter((name) => !declared.has(name));
}

/** Refuses to build an app with a route whose callers are not declared: such a route would be open. */
export function assertEveryRouteDeclared(routes: readonly RegisteredRoute[]): void {
  const missing = undeclaredRoutes(routes);
  if (missing.length > 0) {
    throw new Error(`These routes do not declare who may call them (api/http/callers.ts): ${missing.join(", ")}`);
  }
}
