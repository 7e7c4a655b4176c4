/**
 * Who may frame the hosted checkout (issue 24, finding 7). The checkout component
 * frames `/checkout/:id?parentOrigin=<its page's origin>`; the page may be framed by
 * exactly that origin when the partner declared it (`PATCH /v1/branding
 * { frameOrigins }`), or, in local mode only, when it is a loopback origin (the sample
 * shop and the local browser tests). Anything else, and the page opened on its own,
 * is `frame-ancestors 'none'`. The browser enforces the header against the real
 * ancestor, so a hostile site naming a declared origin in `parentOrigin` is still
 * refused: the parameter only picks which declared origin is sent.
 */

export const MAX_FRAME_ORIGINS = 20;

/** `https://host[:port]` as the browser writes an origin, or a reason it is not one. */
export function parseFrameOrigin(value: string, localMode: boolean): { origin: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: "an origin such as https://shop.example" };
  }
  if (url.protocol !== "https:" && !(localMode && url.protocol === "http:")) {
    return { problem: localMode ? "an https: or http: origin" : "an https: origin" };
  }
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "" || url.pathname !== "/") {
    return { problem: "an origin only (scheme, host and port), without credentials, path, query or fragment" };
  }
  if (value.replace(/\/$/, "").toLowerCase() !== url.origin) {
    return { problem: `an origin written as the browser writes it (${url.origin})` };
  }
  return { origin: url.origin };
}

export function isLoopbackOrigin(origin: string): boolean {
  const host = new URL(origin).hostname;
  return host === "localhost" || /^127(\.\d{1,3}){3}$/.test(host) || host === "[::1]";
}

/** The `frame-ancestors` source of a checkout page request: one origin, or `'none'`. */
export function checkoutFrameAncestor(params: {
  parentOrigin: string | undefined;
  declared: readonly string[];
  localMode: boolean;
}): string {
  if (params.parentOrigin === undefined) return "'none'";
  const parsed = parseFrameOrigin(params.parentOrigin, params.localMode);
  if ("problem" in parsed) return "'none'";
  if (params.declared.includes(parsed.origin)) return parsed.origin;
  if (params.localMode && isLoopbackOrigin(parsed.origin)) return parsed.origin;
  return "'none'";
}
