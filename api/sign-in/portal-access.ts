import type { Kysely } from "kysely";
import { isActiveIssuer } from "../compliance/issuers.js";
import type { ServiceSettings } from "../config/settings.js";
import { ProblemError } from "../http/problem.js";
import { membershipsOf } from "../partners/members.js";
import type { Database } from "../store/database.js";
import type { PortalRole } from "../store/portal-tables.js";
import { isTestAccount } from "./test-identities.js";

const notAllowed = (role: PortalRole, detail: string) =>
  new ProblemError({
    code: "portal_not_allowed",
    title: `This wallet cannot use the ${role} portal`,
    detail,
    extensions: { portal: role },
  });

/**
 * Who may use which portal: any wallet may be an investor; admins are the wallets
 * of ADMIN_ADDRESSES; issuers are wallets an admin registered and has not disabled;
 * partner members are wallets registered as members of at least one partner.
 * Outside local mode, local mode's test accounts are none of these (issue 40): their keys
 * are public, and a store or configuration carried over from local mode may still name them.
 * Checked when a challenge is issued, at sign-in and again on every request.
 */
export async function assertMayUsePortal(
  db: Kysely<Database>,
  settings: Pick<ServiceSettings, "adminAddresses" | "localMode">,
  params: { role: PortalRole; address: string },
): Promise<void> {
  const address = params.address.toLowerCase();
  if (!settings.localMode && isTestAccount(address)) {
    throw notAllowed(
      params.role,
      "This is one of local mode's test accounts, whose keys are public (Anvil's development mnemonic): outside local mode it may use no portal.",
    );
  }
  if (params.role === "admin") {
    if (!settings.adminAddresses.some((admin) => admin.toLowerCase() === address)) {
      throw notAllowed("admin", "This wallet is not one of the configured admin wallets (ADMIN_ADDRESSES).");
    }
    return;
  }
  if (params.role === "partner") {
    if ((await membershipsOf(db, address)).length === 0) {
      throw notAllowed(
        "partner",
        "This wallet is not a member of any partner; an admin, the operator or the partner's API registers members.",
      );
    }
    return;
  }
  if (params.role === "issuer") {
    if (!(await isActiveIssuer(db, address)))
      throw notAllowed("issuer", "This wallet is not a registered issuer; an admin registers issuer wallets.");
  }
}
