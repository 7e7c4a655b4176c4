import type { PartnerVariables } from "../partners/partner-auth.js";
import type { PartnerMemberRole } from "../store/member-tables.js";
import type { PortalVariables } from "./portal-auth.js";

/**
 * A wallet that belongs to several partners names the one it acts for in this header;
 * without it, the first partner it joined (api/sign-in/admit-callers.ts).
 */
export const PARTNER_CHOICE_HEADER = "X-Partner-Id";

/**
 * What a console member's request reads: its session, the partner it acts for (the same
 * `partner` a key sets, so `/api/partner/...` runs the very handlers of `/v1/...`), and its
 * role there (`admin` or `member`).
 */
export type MemberVariables = PortalVariables & PartnerVariables & { memberRole: PartnerMemberRole };
