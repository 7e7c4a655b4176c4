import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { Hono } from "hono";
import { html, raw } from "hono/html";
import { admit, CALLERS } from "../http/callers.js";
import { PROBLEM_CATALOGUE } from "../http/problem-catalogue.js";

/**
 * Scalar's standalone browser bundle, vendored gzipped (api/routes/vendor/README.md) and
 * served from our own origin: the reference loads nothing from a CDN.
 */
const SCALAR_BUNDLE = new URL("./vendor/scalar-api-reference-1.72.1.standalone.js.gz", import.meta.url);
let scalarGzipped: Buffer | undefined;
let scalarPlain: Buffer | undefined;
const scalarScript = (acceptsGzip: boolean): Buffer => {
  scalarGzipped ??= readFileSync(SCALAR_BUNDLE);
  if (acceptsGzip) return scalarGzipped;
  scalarPlain ??= gunzipSync(scalarGzipped);
  return scalarPlain;
};

/** What Scalar's `createApiReference` is given (its configuration object, as JSON). */
const REFERENCE_CONFIG = {
  sources: [
    { title: "Partner API", slug: "partner", url: "/openapi/partner.json", default: true },
    { title: "Browser (hosted checkout)", slug: "browser", url: "/openapi/browser.json" },
    { title: "Portals (console)", slug: "portals", url: "/openapi/portals.json" },
  ],
  withDefaultFonts: false,
  hideClientButton: true,
  hideDarkModeToggle: true,
  showDeveloperTools: "never",
  forceDarkModeState: "light",
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
};

/** JSON inside a `<script>`: nothing in it may close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replaceAll("<", "\\u003c");

/**
 * `/docs`: the API reference rendered by Scalar from the OpenAPI document, one source
 * per audience (partner servers, the customer's browser, the console's portals), and
 * `/docs/problems`, the problem catalogue every problem's `type` URI points into.
 */
export function docsRoutes(_openApi: () => unknown) {
  const page = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>USDC settlement service: API reference</title>
<style>${CONTRAST_CSS}</style></head>
<body>
<div id="app"></div>
<script src="/docs/scalar.js"></script>
<script>Scalar.createApiReference("#app", ${scriptJson({ ...REFERENCE_CONFIG, customCss: CONTRAST_CSS })})</script>
<script src="/docs/a11y.js" defer></script>
</body></html>`;
  return new Hono()
    .get("/scalar.js", admit(CALLERS.anyone), (c) => {
      const gzip = /\bgzip\b/.test(c.req.header("Accept-Encoding") ?? "");
      const body = scalarScript(gzip);
      return c.body(new Uint8Array(body), 200, {
        "Content-Type": "text/javascript; charset=utf-8",
        "Cache-Control": "public, max-age=3600",
        Vary: "Accept-Encoding",
        ...(gzip ? { "Content-Encoding": "gzip" } : {}),
      });
    })
    .get("/a11y.js", admit(CALLERS.anyone), (c) =>
      c.body(A11Y_PATCH, 200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=3600" }),
    )
    .get("/", admit(CALLERS.anyone), (c) => c.html(page))
    .get("/problems", admit(CALLERS.anyone), (c) =>
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

/**
 * Scalar's light theme draws secondary text and badges below WCAG AA contrast (axe-core's
 * color-contrast): the same palette, darkened to at least 4.5:1 on its backgrounds.
 */
const CONTRAST_CSS = `
.light-mode, .light-mode .sidebar, :root {
  --scalar-color-2: #464646;
  --scalar-color-3: #5a5a5a;
  --scalar-color-accent: #005a9e;
  --scalar-color-blue: #005a9e;
  --scalar-color-green: #146c2e;
  --scalar-color-orange: #8f4200;
  --scalar-color-red: #b3261e;
  --scalar-color-yellow: #6b5200;
  --scalar-color-purple: #5f3dc4;
  --scalar-sidebar-color-2: #464646;
  --scalar-sidebar-search-color: #5a5a5a;
  --scalar-sidebar-color-active: #005a9e;
}
.dark-mode {
  --scalar-color-blue: #9aaaff;
  --scalar-color-green: #5fe3a1;
  --scalar-color-orange: #ffab7a;
  --scalar-color-red: #ff97a5;
  --scalar-color-yellow: #fbc97a;
  --scalar-color-purple: #c9b2ff;
}
`;

/**
 * What axe-core finds missing in Scalar's interface, supplied as it renders: a name for
 * icon-only buttons (from their title), a visible label that is also the accessible name,
 * and keyboard focus for the scrolling endpoint lists.
 */
const A11Y_PATCH = `(() => {
  const fix = () => {
    for (const button of document.querySelectorAll("button")) {
      if (button.textContent.trim() || button.getAttribute("aria-label") || button.getAttribute("aria-labelledby")) continue;
      const titled = button.getAttribute("title") || button.querySelector("[title]")?.getAttribute("title") || button.querySelector("svg title")?.textContent;
      button.setAttribute("aria-label", titled || "More options");
    }
    for (const copy of document.querySelectorAll("button.scalar-code-copy:not([aria-label])")) copy.setAttribute("aria-label", "Copy the code");
    for (const element of document.querySelectorAll(".show-more[aria-label]")) element.removeAttribute("aria-label");
    for (const list of document.querySelectorAll('ul[aria-label$=" endpoints"]:not([tabindex])')) list.setAttribute("tabindex", "0");
  };
  new MutationObserver(fix).observe(document.documentElement, { subtree: true, childList: true });
  fix();
})();
`;

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}
