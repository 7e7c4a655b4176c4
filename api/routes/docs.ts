import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import { html, raw } from "hono/html";
import { PROBLEM_CATALOGUE } from "../http/problem-catalogue.js";

const require = createRequire(import.meta.url);
/** Scalar's standalone bundle, served from our own origin: the reference loads nothing from a CDN. */
let scalarBundle: string | undefined;
const scalarScript = () => {
  scalarBundle ??= readFileSync(join(dirname(require.resolve("@scalar/api-reference")), "browser", "standalone.js"), "utf8");
  return scalarBundle;
};

/**
 * `/docs`: the API reference rendered by Scalar from the OpenAPI document, one source
 * per audience (partner servers, the customer's browser, the console's portals), and
 * `/docs/problems`, the problem catalogue every problem's `type` URI points into.
 */
export function docsRoutes(_openApi: () => unknown) {
  return new Hono()
    .get("/scalar.js", (c) =>
      c.body(scalarScript(), 200, {
        "Content-Type": "text/javascript; charset=utf-8",
        "Cache-Control": "public, max-age=3600",
      }),
    )
    .get(
      "/",
      Scalar({
        pageTitle: "USDC settlement service: API reference",
        cdn: "/docs/scalar.js",
        sources: [
          { title: "Partner API", slug: "partner", url: "/openapi/partner.json", default: true },
          { title: "Browser (hosted checkout)", slug: "browser", url: "/openapi/browser.json" },
          { title: "Portals (console)", slug: "portals", url: "/openapi/portals.json" },
        ],
        withDefaultFonts: false,
        hideClientButton: true,
        telemetry: false,
        agent: { disabled: true },
        mcp: { disabled: true },
      } as Parameters<typeof Scalar>[0]),
    )
    .get("/problems", (c) =>
      c.html(html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Problem codes: USDC settlement service</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#111}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
code{background:#f3f3f3;padding:0 .2rem}tr:target{background:#fff6d5}</style></head>
<body>
<main>
<h1>Problem codes</h1>
<p>Every error is an RFC 9457 <code>application/problem+json</code> body with a stable <code>code</code>; its
<code>type</code> links to the code's row below. The <a href="/docs">API reference</a> lists, per operation, the
codes it can answer.</p>
<table><thead><tr><th scope="col">Code</th><th scope="col">Status</th><th scope="col">Title</th><th scope="col">When it happens</th></tr></thead><tbody>
${raw(
  PROBLEM_CATALOGUE.map(
    (p) =>
      `<tr id="problem-${p.code}"><td><code>${p.code}</code></td><td>${p.statuses.join(", ")}</td><td>${escapeHtml(p.title)}</td><td>${escapeHtml(p.meaning)}</td></tr>`,
  ).join(""),
)}
</tbody></table>
</main>
</body></html>`),
    );
}

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}
