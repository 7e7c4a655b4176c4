/** Settings of the portals, from the configuration validated at start (`api/config/variables.ts`). */
export type PortalSettings = {
  /** Lifetime of a sign-in challenge (EIP-4361 `Expiration Time`). */
  challengeTtlSeconds: number;
  /** Fixed lifetime of a portal session; it is never extended. */
  sessionTtlSeconds: number;
  /** Public verification: requests per client IP per window. */
  verifyRateLimit: { limit: number; windowMs: number };
  /** How long an investor's purchase holds its units (the checkout session's lifetime). */
  reservationSeconds: number;
  /** After a purchase's session expired, wait this long before its units go back on sale. */
  releaseGraceMs: number;
  /** Take the client IP from the first `X-Forwarded-For` entry (only behind a proxy that sets it). */
  trustProxy: boolean;
};
