import { existsSync, readFileSync } from "node:fs";
import { join, normalize } from "node:path";
import { Hono } from "hono";
import { currentConsoleBuild } from "../../console/build.js";
import { consoleHeaders } from "../hosted/security-headers.js";
import { problemResponse, problems } from "../http/problem.js";

const CONTENT_TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  html: "text/html; charset=utf-8",
};

/**
 * `GET /console` and everything under it: the built single-page app. Hashed assets
 * are cached for good; any other path answers `index.html` (the app routes itself).
 */
export function consoleRoutes() {
  const app = new Hono();
  app.get("/*", consoleHeaders, (c) => {
    const dir = currentConsoleBuild();
    if (dir === undefined) {
      return problemResponse(c, problems.notFound("The console build (run `npm start`, which builds it)"));
    }
    const rest = c.req.path.replace(/^\/console\/?/, "");
    if (rest.startsWith("assets/")) {
      const file = normalize(join(dir, rest));
      if (!file.startsWith(join(dir, "assets")) || !existsSync(file)) return problemResponse(c, problems.notFound(c.req.path));
      const extension = file.slice(file.lastIndexOf(".") + 1);
      return c.body(readFileSync(file), 200, {
        "Content-Type": CONTENT_TYPES[extension] ?? "application/octet-stream",
        "Cache-Control": "public, max-age=31536000, immutable",
      });
    }
    return c.body(readFileSync(join(dir, "index.html"), "utf8"), 200, {
      "Content-Type": CONTENT_TYPES.html as string,
      "Cache-Control": "no-store",
    });
  });
  return app;
}
