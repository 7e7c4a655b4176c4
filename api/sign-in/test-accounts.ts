import { getAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { problems } from "../http/problem.js";
import type { PortalRole } from "../store/portal-tables.js";
import { completeSignIn } from "./sign-in.js";
import { checkSignedChallenge, issueChallenge, type SignInOrigin } from "./siwe-challenge.js";
import { TEST_ACCOUNT_INDEX, testAccount, testAccountAddress } from "./test-identities.js";

export { TEST_ACCOUNT_INDEX, testAccountAddress };

/**
 * Local mode only: one test account per console role (test-identities.ts: Anvil's
 * well-known development mnemonic, accounts 10 to 13). `npm start` seeds each with its
 * role (docs/console.md, "Local mode"): the admin test account is an admin (ADMIN_ADDRESSES), the partner test account a member
 * of the demo partner, the issuer test account a registered issuer, and the investor
 * test account an approved investor. The service signs their sign-in message itself,
 * through the same challenge, checks and session as a wallet's: a role the account
 * does not hold is refused as for any wallet. Nowhere but local mode does any of this
 * exist: the routes are not mounted, the handler refuses again, and no portal admits
 * the accounts (portal-access.ts).
 */
const ROLES: PortalRole[] = ["investor", "partner", "issuer", "admin"];

function requireLocalMode(context: Pick<AppContext, "settings">): void {
  if (!context.settings.localMode) throw problems.notFound("Test accounts");
}

/** The console's "Sign in with a test account" list: each role, its account and its mnemonic index. */
export function listTestAccounts(context: Pick<AppContext, "settings">) {
  requireLocalMode(context);
  return {
    data: ROLES.map((role) => ({
      role,
      address: getAddress(testAccountAddress(role)),
      anvilAccountIndex: TEST_ACCOUNT_INDEX[role],
    })),
  };
}

/**
 * Signs in `role`'s test account: a fresh challenge, signed here with the account's
 * key, then exactly the wallet path (every check of the signed message, the portal's
 * access rule, one session, the audit entry).
 */
export async function signInWithTestAccount(
  context: Pick<AppContext, "settings" | "store" | "networks" | "rpc">,
  params: { role: PortalRole; origin: SignInOrigin },
) {
  requireLocalMode(context);
  const account = testAccount(params.role);
  const chainId = context.networks[0]?.chainId;
  if (chainId === undefined) throw problems.notFound("Test accounts");
  const portal = context.settings.portal;
  const challenge = await issueChallenge(context.store, {
    portal: params.role,
    address: account.address,
    chainId,
    origin: params.origin,
    ttlSeconds: portal.challengeTtlSeconds,
  });
  const signature = await account.signMessage({ message: challenge.message });
  const checked = await checkSignedChallenge(context, {
    portal: params.role,
    message: challenge.message,
    signature,
    origin: params.origin,
    ttlSeconds: portal.challengeTtlSeconds,
  });
  return completeSignIn(context.store, context.settings, { challenge: checked, sessionTtlSeconds: portal.sessionTtlSeconds });
}
