import type { Context } from "hono";

/**
 * `WWW-Authenticate` challenges (RFC 9110 section 11.6.1, RFC 6750 section 3) for
 * every 401 the service answers; docs/http-conventions.md, "Authentication challenges",
 * lists them.
 */
export const REALMS = {
  partnerApi: "partner API",
  portal: (role: string) => `${role} portal`,
  checkout: "checkout",
} as const;

const CHALLENGE_VARIABLE = "wwwAuthenticate" as never;

/**
 * `Bearer realm="..."`, with `error="invalid_token"` when a token was sent but is
 * wrong, revoked or expired (a missing or malformed header gets no error code).
 */
export function bearerChallenge(realm: string, tokenRefused = false): string {
  return `Bearer realm="${realm}"${tokenRefused ? `, error="invalid_token"` : ""}`;
}

/** Sets the challenge a 401 thrown next will carry. */
export function challengeWith(c: Context, challenge: string): void {
  c.header("WWW-Authenticate", challenge);
  c.set(CHALLENGE_VARIABLE, challenge as never);
}

/**
 * For a 401 whose thrower set no challenge (sign-in refusals, a checkout client
 * token): the scheme its path uses. A checkout client token travels in the JSON
 * body, so its scheme is our own `ClientToken`.
 */
export function ensureChallenge(c: Context): void {
  if (c.get(CHALLENGE_VARIABLE) === undefined) challengeWith(c, fallbackChallenge(c.req.path));
}

function fallbackChallenge(path: string): string {
  const portal = /^\/api\/(investor|issuer|admin|partner)\//.exec(path)?.[1];
  if (portal !== undefined) return bearerChallenge(REALMS.portal(portal));
  if (path.startsWith("/api/rwa/")) return bearerChallenge(REALMS.portal("investor"));
  if (path.startsWith("/v1/public/") || !path.startsWith("/v1/")) return `ClientToken realm="${REALMS.checkout}"`;
  return bearerChallenge(REALMS.partnerApi);
}
