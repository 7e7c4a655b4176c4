/**
 * Headers of the hosted pages. Everything they load comes from this origin, so
 * the policy allows `'self'` only; no inline script or style, no third party.
 * The checkout is meant to be framed by partner pages (`frame-ancestors *`: it
 * shows nothing until the framing page hands over the session's client token).
 * The claim page talks to a wallet and is never framed.
 */
export function hostedPageHeaders(page: "checkout" | "claim"): Record<string, string> {
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    page === "checkout" ? "frame-ancestors *" : "frame-ancestors 'none'",
  ].join("; ");
  return {
    "Content-Security-Policy": policy,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    ...(page === "claim" ? { "X-Frame-Options": "DENY" } : {}),
  };
}
