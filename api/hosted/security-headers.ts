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
 * or style, no third party. The checkout is meant to be framed by partner pages
 * (`frame-ancestors *`, no X-Frame-Options: it shows nothing until the framing page
 * hands over the session's client token). The claim and refund pages talk to a wallet and are
 * never framed.
 */
export function hostedPageHeaders(page: "checkout" | "claim" | "refund") {
  return secureHeaders({
    contentSecurityPolicy: { ...SAME_ORIGIN_ONLY, frameAncestors: [page === "checkout" ? "*" : "'none'"] },
    xFrameOptions: page === "checkout" ? false : "DENY",
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
