import { join } from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";
import { currentConsoleBuild } from "../../console/build.js";
import { consoleHeaders } from "../hosted/security-headers.js";
import { admit, CALLERS } from "../http/callers.js";
import { faviconIco } from "../http/favicon.js";
import { problemResponse, problems } from "../http/problem.js";
import { noFile, servedFrom } from "../http/static-files.js";

/**
 * `GET /console` and everything under it: the built single-page app, served by
 * `@hono/node-server`'s `serveStatic` (content type from the extension, length,
 * `HEAD` and ranges; a path with a `..` segment, also percent-encoded, is refused).
 * Hashed assets are cached for good; any other path answers `index.html` with
 * `no-store` (the app routes itself). The build directory can change between
 * requests (a newer build is renamed into place), so its root is worked out per request.
 */
export function consoleRoutes() {
  const app = new Hono();
  app.get("/*", admit(CALLERS.anyone), consoleHeaders, async (c) => {
    const dir = currentConsoleBuild();
    if (dir === undefined) {
      return problemResponse(c, problems.notFound("The console build (run `npm start`, which builds it)"));
    }
    const root = servedFrom(dir);
    if (c.req.path.startsWith("/console/assets/")) {
      const asset = await serveStatic({
        root,
        rewriteRequestPath: (path) => path.replace(/^\/console/, ""),
        onFound: (_path, found) => {
          found.header("Cache-Control", "public, max-age=31536000, immutable");
        },
      })(c, noFile);
      return asset ?? problemResponse(c, problems.notFound(c.req.path));
    }
    const index = await serveStatic({
      path: join(root, "index.html"),
      onFound: (_path, found) => {
        found.header("Cache-Control", "no-store");
      },
    })(c, noFile);
    return index ?? problemResponse(c, problems.notFound("The console build (run `npm start`, which builds it)"));
  });
  return app;
}

const FAVICON = faviconIco();

/** `GET /favicon.ico`: the service's own icon, so no page's automatic request for it ends in a 404. */
export function faviconRoutes() {
  const app = new Hono();
  app.get("/favicon.ico", admit(CALLERS.anyone), (c) =>
    c.body(new Uint8Array(FAVICON), 200, { "Content-Type": "image/x-icon", "Cache-Control": "public, max-age=86400" }),
  );
  return app;
}
