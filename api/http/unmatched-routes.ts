import type { Context, Hono } from "hono";
import { METHOD_NAME_ALL } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";
import { problem, problemResponse } from "./problem.js";

/**
 * The answer for a request no route of `app` takes, as problem+json (docs/http-conventions.md,
 * "Unknown paths and methods"): 405 `method_not_allowed` with `Allow` when the path
 * exists under other methods, else 404 `not_found`. Ponder mounts our app inside
 * its own, so the app's `notFound` is never consulted: register this as the last
 * handler of the prefixes it guards.
 */
// biome-ignore lint/suspicious/noExplicitAny: any app's routes will do
export function unmatchedRouteHandler(app: Hono<any, any, any>) {
  let router: TrieRouter<string> | undefined;
  /** The methods the routes of `app` answer at `path` (HEAD with GET, as Hono serves it). */
  const methodsAt = (path: string): string[] => {
    if (router === undefined) {
      router = new TrieRouter<string>();
      // Middleware is registered for every method; only routes say what a path accepts.
      for (const route of app.routes) if (route.method !== METHOD_NAME_ALL) router.add(METHOD_NAME_ALL, route.path, route.method);
    }
    const methods = new Set(router.match("GET", path)[0].map(([method]) => method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  };

  return (c: Context) => {
    const path = c.req.path;
    const allowed = methodsAt(path);
    if (allowed.length > 0) {
      c.header("Allow", allowed.join(", "));
      return problemResponse(
        c,
        problem("method_not_allowed", `${c.req.method} is not accepted at ${path}; it accepts ${allowed.join(", ")}.`, {
          allow: allowed,
        }),
      );
    }
    const withoutSlash = path.length > 1 && path.endsWith("/") ? path.replace(/\/+$/, "") : undefined;
    const hint =
      withoutSlash !== undefined && methodsAt(withoutSlash).length > 0
        ? ` Did you mean ${withoutSlash} (no trailing slash)?`
        : "";
    return problemResponse(c, problem("not_found", `No route answers ${c.req.method} ${path}.${hint}`));
  };
}
