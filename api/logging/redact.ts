/**
 * The one redaction of credentials that URLs carry (docs/security.md, issue 24).
 * Providers put an RPC key in the userinfo (`https://user:password@host`), in the
 * path (`/v2/<key>`, `/<key>/`) or in the query (`?apikey=<key>`), and error
 * messages quote the URL they failed on (undici's "Request cannot be constructed
 * from a URL that includes credentials: …", viem's "URL: …"). Every log line,
 * error, health answer and CLI output that may hold such a URL passes through
 * `redactSecrets`.
 */

const HIDDEN = "***";

/** Every `scheme://…` in a text, up to a blank, a quote or a closing bracket. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`()[\]{}]+/gi;

/**
 * A URL with every part that can hold a secret replaced by `***`: userinfo, the whole
 * path after the host, the whole query (a name can be the key: `?<key>`) and the
 * fragment. A key need not look like one (short, dotted), so no part is judged by its
 * looks (issue 40). Scheme, host and port stay: the operator still sees which endpoint
 * it is. Text that does not parse as a URL is cut after its scheme and host.
 */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    const match = /^([a-z][a-z0-9+.-]*:\/\/)(?:[^@/]*@)?([^/?#]*)/i.exec(raw);
    return match === null ? HIDDEN : `${match[1]}${match[2]}/${HIDDEN}`;
  }
  const userinfo = url.username !== "" || url.password !== "" ? `${HIDDEN}@` : "";
  // `new URL` gives "/" for no path on http(s), "" on other schemes.
  const path = url.pathname === "" || url.pathname === "/" ? url.pathname : `/${HIDDEN}`;
  const query = url.search === "" ? "" : `?${HIDDEN}`;
  const fragment = url.hash === "" ? "" : `#${HIDDEN}`;
  return `${url.protocol}//${userinfo}${url.host}${path}${query}${fragment}`;
}

/** `text` with every URL in it redacted (`redactUrl`). */
export function redactSecrets(text: string): string {
  return text.replace(URL_IN_TEXT, (found) => {
    // A sentence may end right after the URL: keep its full stop or comma outside.
    const trailing = /[.,;:!?]+$/.exec(found)?.[0] ?? "";
    return redactUrl(found.slice(0, found.length - trailing.length)) + trailing;
  });
}

/** Writes one JSON log line to stderr, redacted: every service log line goes through here. */
export function logJson(record: Record<string, unknown>): void {
  console.error(redactSecrets(JSON.stringify(record)));
}
