import { createMiddleware } from "hono/factory";
import { findPartnerByApiKey, type Partner } from "../partners/api-keys.js";
import type { Store } from "../store/open-store.js";
import { problems } from "./problem.js";

export type PartnerVariables = { partner: Partner };

/** `Authorization: Bearer <API_KEY>` for partner server calls (SPEC section 4). */
export function partnerAuth(store: Store) {
  return createMiddleware<{ Variables: PartnerVariables }>(async (c, next) => {
    const header = c.req.header("Authorization");
    if (header === undefined) throw problems.unauthenticated("Send the partner API key as `Authorization: Bearer <API_KEY>`.");
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) throw problems.unauthenticated("The Authorization header must be `Bearer <API_KEY>`.");
    const partner = await findPartnerByApiKey(store, match[1] as string);
    if (partner === undefined) throw problems.unauthenticated("The API key is not valid or has been revoked.");
    c.set("partner", partner);
    await next();
  });
}
