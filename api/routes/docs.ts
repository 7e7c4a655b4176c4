import { Hono } from "hono";
import { html, raw } from "hono/html";
import { PROBLEM_CATALOGUE } from "../http/problem-catalogue.js";

type OpenApiDocument = { paths?: Record<string, Record<string, { summary?: string; security?: unknown[] }>> };

/** Human docs at `/docs`: every operation of the OpenAPI document and every problem code. Self-contained, no CDN. */
export function docsRoutes(openApi: () => unknown) {
  return new Hono().get("/", (c) => {
    const operations = Object.entries((openApi() as OpenApiDocument).paths ?? {}).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ method: method.toUpperCase(), path, ...operation })),
    );
    return c.html(html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>USDC settlement service: API</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#111}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
code{background:#f3f3f3;padding:0 .2rem}</style></head>
<body>
<h1>USDC settlement service</h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Partner calls send
<code>Authorization: Bearer &lt;API_KEY&gt;</code>; browser calls carry the client token in the JSON body.
Amounts are decimal strings of USDC base units (6 decimals). Errors are RFC 9457
<code>application/problem+json</code> with a stable <code>code</code>.</p>
<h2>Operations</h2>
<table><thead><tr><th>Method</th><th>Path</th><th>What it does</th></tr></thead><tbody>
${raw(operations.map((op) => `<tr><td>${op.method}</td><td><code>${escapeHtml(op.path)}</code></td><td>${escapeHtml(op.summary ?? "")}</td></tr>`).join(""))}
</tbody></table>
<h2>Problem codes</h2>
<table><thead><tr><th>Code</th><th>Status</th><th>Meaning</th></tr></thead><tbody>
${raw(PROBLEM_CATALOGUE.map((p) => `<tr id="problem-${p.code}"><td><code>${p.code}</code></td><td>${p.status}</td><td>${escapeHtml(p.meaning)}</td></tr>`).join(""))}
</tbody></table>
</body></html>`);
  });
}

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}
