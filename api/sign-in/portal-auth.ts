import type { PortalSession } from "./portal-sessions.js";

/**
 * What a route admitted with a portal session reads (`Authorization: Bearer <token>` from
 * `/api/<role>/auth/verify`): the session, checked by api/sign-in/admit-callers.ts against
 * the route's declared role, the wallet still allowed in that portal.
 */
export type PortalVariables = { portalSession: PortalSession };
