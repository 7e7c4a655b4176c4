import { secureHeaders } from "hono/secure-headers";

const SAME_ORIGIN_ONLY = {
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  baseUri: ["'none'"],
};

/**
 * Headers of the hosted pages (Hono's secure-headers middleware, with its defaults:
 * nosniff, no referrer, HSTS, same-origin opener and resources). Everything they
 * load comes from this origin, so the policy allows `'self'` only; no inline script
 * or style, no third party. The checkout may be framed by one origin the caller
 * worked out (`checkoutFrameAncestor`: the component's page, declared by the
 * partner) and by nobody else; with no such origin, and for the claim and refund pages (which talk to a wallet), it is
 * `frame-ancestors 'none'` and `X-Frame-Options: DENY`. X-Frame-Options has no
 * form naming one origin that browsers still honour, so it is left out when an
 * origin is allowed (frame-ancestors wins over it anyway).
 */
export function hostedPageHeaders(frameAncestor: string = "'none'") {
  return secureHeaders({
    contentSecurityPolicy: { ...SAME_ORIGIN_ONLY, frameAncestors: [frameAncestor] },
    xFrameOptions: frameAncestor === "'none'" ? "DENY" : false,
  });
}

/**
 * The console's headers: everything comes from this origin (scripts, styles, API
 * calls); no inline script, no framing. The wallet is the browser's injected
 * provider, which needs no network access from the page.
 */
export const consoleHeaders = secureHeaders({
  contentSecurityPolicy: { ...SAME_ORIGIN_ONLY, imgSrc: ["'self'", "data:"], frameAncestors: ["'none'"] },
  xFrameOptions: "DENY",
});
