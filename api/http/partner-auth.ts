import { createMiddleware } from "hono/factory";
import { findPartnerByApiKey, type Partner } from "../partners/api-keys.js";
import type { Store } from "../store/open-store.js";
import { problems } from "./problem.js";
import { bearerChallenge, challengeWith, REALMS } from "./www-authenticate.js";

export type PartnerVariables = { partner: Partner };

/** `Authorization: Bearer <API_KEY>` for partner server calls (docs/quick-start.md). */
export function partnerAuth(store: Store) {
  return createMiddleware<{ Variables: PartnerVariables }>(async (c, next) => {
    const refuse = (detail: string, keyRefused = false) => {
      challengeWith(c, bearerChallenge(REALMS.partnerApi, keyRefused));
      return problems.unauthenticated(detail);
    };
    const header = c.req.header("Authorization");
    if (header === undefined) throw refuse("Send the partner API key as `Authorization: Bearer <API_KEY>`.");
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) throw refuse("The Authorization header must be `Bearer <API_KEY>`.");
    const partner = await findPartnerByApiKey(store, match[1] as string);
    if (partner === undefined) throw refuse("The API key is not valid or has been revoked.", true);
    c.set("partner", partner);
    await next();
  });
}
