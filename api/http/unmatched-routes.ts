import type { Context, Hono } from "hono";
import { METHOD_NAME_ALL } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";
import { admitAnyOf, type Callers, declarationOf } from "./callers.js";
import { problem, problemResponse } from "./problem.js";

type DeclaredRoute = { method: string; path: string; segments: string[]; callers: Callers };

/**
 * The answer for a request no route of `app` takes, as problem+json (docs/http-conventions.md,
 * "Unknown paths and methods"): 405 `method_not_allowed` with `Allow` when the path
 * exists under other methods, else 404 `not_found`. Ponder mounts our app inside
 * its own, so the app's `notFound` is never consulted: register this as the last
 * handler of the prefixes it guards.
 *
 * Before it says either, the caller must be one that the routes nearest the path admit
 * (the routes at that path for a wrong method; else the routes under its longest known
 * prefix), so an anonymous visitor learns nothing of a partner's routes.
 */
// biome-ignore lint/suspicious/noExplicitAny: any app's routes will do
export function unmatchedRouteHandler(app: Hono<any, any, any>) {
  let router: TrieRouter<DeclaredRoute> | undefined;
  let declared: DeclaredRoute[] = [];
  const routes = () => {
    if (router === undefined) {
      router = new TrieRouter<DeclaredRoute>();
      const byRoute = new Map<string, DeclaredRoute>();
      // Middleware is registered for every method; only routes say what a path accepts.
      for (const route of app.routes) {
        if (route.method === METHOD_NAME_ALL) continue;
        const key = `${route.method} ${route.path}`;
        const callers = declarationOf(route.handler);
        const known = byRoute.get(key);
        if (known === undefined) {
          const entry = { method: route.method, path: route.path, segments: segmentsOf(route.path), callers: callers ?? [] };
          byRoute.set(key, entry);
          router.add(METHOD_NAME_ALL, route.path, entry);
        } else if (callers !== undefined) {
          known.callers = callers;
        }
      }
      declared = [...byRoute.values()];
    }
    return router;
  };
  /** The routes at `path` under any method (HEAD answers with GET, as Hono serves it). */
  const routesAt = (path: string): DeclaredRoute[] =>
    routes()
      .match("GET", path)[0]
      .map(([route]) => route);
  const methodsOf = (found: DeclaredRoute[]): string[] => {
    const methods = new Set(found.map((route) => route.method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  };
  /** The routes under the longest prefix of `path` (two segments at least: `/v1/x`, `/api/x`) that has any. */
  const routesNear = (path: string): DeclaredRoute[] => {
    routes();
    const segments = segmentsOf(path);
    for (let length = segments.length - 1; length >= 2; length--) {
      const prefix = segments.slice(0, length);
      const under = declared.filter(
        (route) =>
          route.segments.length >= length &&
          prefix.every((segment, index) => sameSegment(route.segments[index] as string, segment)),
      );
      if (under.length > 0) return under;
    }
    return [];
  };

  return async (c: Context) => {
    const path = c.req.path;
    const here = routesAt(path);
    const withoutSlash = path.length > 1 && path.endsWith("/") ? path.replace(/\/+$/, "") : undefined;
    const thereWithoutSlash = here.length > 0 || withoutSlash === undefined ? [] : routesAt(withoutSlash);
    const nearest = here.length > 0 ? here : thereWithoutSlash.length > 0 ? thereWithoutSlash : routesNear(path);
    await admitAnyOf(
      c,
      nearest.map((route) => route.callers),
    );
    const allowed = methodsOf(here);
    if (allowed.length > 0) {
      c.header("Allow", allowed.join(", "));
      return problemResponse(
        c,
        problem("method_not_allowed", `${c.req.method} is not accepted at ${path}; it accepts ${allowed.join(", ")}.`, {
          allow: allowed,
        }),
      );
    }
    const hint = thereWithoutSlash.length > 0 ? ` Did you mean ${withoutSlash} (no trailing slash)?` : "";
    return problemResponse(c, problem("not_found", `No route answers ${c.req.method} ${path}.${hint}`));
  };
}

function segmentsOf(path: string): string[] {
  return path.split("/").filter((segment) => segment !== "");
}

/** A route's segment takes a request's: equal, or a parameter or wildcard. */
function sameSegment(pattern: string, segment: string): boolean {
  return pattern === segment || pattern.startsWith(":") || pattern === "*";
}
