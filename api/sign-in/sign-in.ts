import { getAddress } from "viem";
import { appendAudit } from "../audit/audit-log.js";
import type { ServiceSettings } from "../config/settings.js";
import { problem } from "../http/problem.js";
import type { Store } from "../store/open-store.js";
import type { PortalChallengeTable } from "../store/portal-tables.js";
import { assertMayUsePortal } from "./portal-access.js";
import { createPortalSession, type PortalSession, revokePortalSession } from "./portal-sessions.js";
import { consumeChallenge } from "./siwe-challenge.js";

/**
 * Turns a checked challenge into a session: the nonce is consumed with a guarded
 * UPDATE in the same transaction that creates the session, so a replayed or
 * concurrently submitted challenge yields at most one session.
 */
export async function completeSignIn(
  store: Store,
  settings: Pick<ServiceSettings, "adminAddresses" | "localMode">,
  params: { challenge: PortalChallengeTable; sessionTtlSeconds: number; now?: number },
): Promise<{ token: string; session: PortalSession }> {
  const now = params.now ?? Date.now();
  const { challenge } = params;
  return store.transaction().execute(async (trx) => {
    if (!(await consumeChallenge(trx, challenge.nonce, now))) {
      throw problem("challenge_used", "This challenge has already been used or has expired; request a new one.");
    }
    await assertMayUsePortal(trx, settings, { role: challenge.portal, address: challenge.address });
    const created = await createPortalSession(trx, {
      role: challenge.portal,
      address: challenge.address,
      ttlSeconds: params.sessionTtlSeconds,
      now,
    });
    if (challenge.portal !== "investor") {
      await appendAudit(trx, {
        actor: { role: challenge.portal, address: challenge.address },
        action: "auth.sign_in",
        target: { type: "portal_session", id: created.session.id },
        details: { address: getAddress(challenge.address), expiresAt: new Date(created.session.expiresAt).toISOString() },
        now,
      });
    }
    return created;
  });
}

export async function signOut(store: Store, session: PortalSession): Promise<void> {
  await store.transaction().execute(async (trx) => {
    await revokePortalSession(trx, session.id);
    if (session.role !== "investor") {
      await appendAudit(trx, {
        actor: { role: session.role, address: session.address },
        action: "auth.sign_out",
        target: { type: "portal_session", id: session.id },
      });
    }
  });
}
