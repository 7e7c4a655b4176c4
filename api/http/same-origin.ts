import { problem } from "./problem.js";

/** What a request says of where it comes from. */
export type RequestOrigin = {
  /** The `Host` header: the name the caller used to reach us. */
  host: string | undefined;
  /** The `Origin` header: the page that sent it, when a browser sent it. */
  origin: string | undefined;
  /** The `Sec-Fetch-Site` header: a browser's own word on it (`same-origin`, `same-site`, `cross-site`, `none`). */
  fetchSite: string | undefined;
};

/** Names that reach this machine only: a page elsewhere cannot make its own name resolve to them for our port and keep its origin. */
const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d+)?$/i;

/** Whether a `Host` header names this machine by a loopback name (local mode's only names). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOST.test(host);
}

/**
 * Refuses (403 `cross_origin_refused`) a request that did not come from the service's own
 * origin, for a route that hands out a credential without asking for one (local mode's
 * test-account sign-in, issue 40):
 *
 * - `Host` must name the service: the host of `PUBLIC_BASE_URL`, or without it (local mode)
 *   a loopback name. Any other name is DNS rebinding: a page whose own domain was made to
 *   resolve to 127.0.0.1 is same-origin with itself, never with us.
 * - `Origin`, when sent, must be the service's own origin (`PUBLIC_BASE_URL`'s, else
 *   `http://<Host>`); without `Origin`, a browser's `Sec-Fetch-Site` must be `same-origin`
 *   or `none` (typed in the address bar). A request with neither is not from a browser
 *   (a script, the CLI): no web page can make it.
 */
export function requireOwnOrigin(request: RequestOrigin, publicBaseUrl: string | undefined): void {
  const own = publicBaseUrl === undefined ? undefined : new URL(publicBaseUrl);
  const host = request.host?.toLowerCase();
  const hostIsOurs = host !== undefined && (own === undefined ? isLoopbackHost(host) : host === own.host.toLowerCase());
  if (!hostIsOurs) {
    throw problem(
      "cross_origin_refused",
      own === undefined
        ? "Open the console at http://localhost:<port> or http://127.0.0.1:<port>: this route answers only the service's own name."
        : `Open the console at ${own.origin}: this route answers only the service's own name.`,
    );
  }
  const ownOrigin = own?.origin ?? `http://${host}`;
  if (request.origin !== undefined) {
    if (request.origin.toLowerCase() !== ownOrigin.toLowerCase())
      throw problem("cross_origin_refused", `Only pages of ${ownOrigin} may call this route.`);
    return;
  }
  if (request.fetchSite !== undefined && !["same-origin", "none"].includes(request.fetchSite.toLowerCase()))
    throw problem("cross_origin_refused", `Only pages of ${ownOrigin} may call this route.`);
}
