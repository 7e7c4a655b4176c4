import type { Generated } from "kysely";

/**
 * Tables of the investor, issuer and admin portals (migration 0004). Same conventions
 * as `database.ts`: addresses lower-case hex, money as decimal strings of USDC base
 * units, instants as integer milliseconds since epoch, booleans as 0/1.
 */
export interface PortalTables {
  portal_challenge: PortalChallengeTable;
  portal_session: PortalSessionTable;
  issuer: IssuerTable;
  offering: OfferingTable;
  investor_eligibility: InvestorEligibilityTable;
  offering_position: OfferingPositionTable;
  rwa_purchase: RwaPurchaseTable;
  audit_log: AuditLogTable;
}

export type PortalRole = "investor" | "issuer" | "admin" | "partner";

export interface PortalChallengeTable {
  /** 128 random bits, base62; the SIWE nonce. */
  nonce: string;
  portal: PortalRole;
  address: string;
  chain_id: number;
  domain: string;
  uri: string;
  /** The exact EIP-4361 text we issued; only this string is accepted back. */
  message: string;
  issued_at: number;
  expires_at: number;
  consumed_at: number | null;
}

export interface PortalSessionTable {
  id: string;
  /** SHA-256 of the bearer token, hex; the token itself is never stored. */
  token_hash: string;
  role: PortalRole;
  address: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface IssuerTable {
  id: string;
  address: string;
  name: string;
  /** The partner that owns this issuer's checkout sessions and events. */
  partner_id: string;
  registered_by: string;
  created_at: number;
  disabled_at: number | null;
}

export type OfferingStatus = "draft" | "in_review" | "rejected" | "open" | "paused" | "closed";

export interface OfferingTable {
  id: string;
  issuer_id: string;
  status: OfferingStatus;
  name: string;
  description: string;
  network: string;
  chain_id: number;
  asset_token: string | null;
  unit_price_usdc: string;
  min_units: number;
  max_units_per_investor: number;
  total_units: number;
  /** Units neither reserved by an open purchase nor sold. */
  units_available: number;
  opens_at: number;
  closes_at: number;
  settlement_address: string;
  certificate_enabled: number;
  require_kyc: number;
  require_accreditation: number;
  /** JSON array of ISO 3166-1 alpha-2 codes, or null for "any". */
  allowed_jurisdictions: string | null;
  blocked_jurisdictions: string | null;
  /** The admin's reason when the offering was rejected. */
  review_reason: string | null;
  /** `issuer` or `admin` while paused; an issuer cannot lift an admin's pause. */
  paused_by: string | null;
  close_reason: string | null;
  submitted_at: number | null;
  approved_at: number | null;
  created_at: number;
  updated_at: number;
}

export type KycStatus = "pending" | "approved" | "rejected" | "needs_update";

export interface InvestorEligibilityTable {
  address: string;
  kyc_status: KycStatus;
  /** ISO 3166-1 alpha-2, upper case. */
  jurisdiction: string | null;
  accredited: number;
  accreditation_expires_at: number | null;
  frozen_at: number | null;
  frozen_reason: string | null;
  updated_by: string;
  updated_at: number;
}

export interface OfferingPositionTable {
  offering_id: string;
  investor: string;
  /** Units reserved or bought by this investor in this offering. */
  units: number;
}

export interface RwaPurchaseTable {
  id: string;
  offering_id: string;
  investor: string;
  /** Wallet the certificate is minted to (the investor's unless given at checkout). */
  recipient: string;
  units: number;
  unit_price_usdc: string;
  total_price_usdc: string;
  network: string;
  chain_id: number;
  /** The payment engine's checkout session; null only while it is being created. */
  session_id: string | null;
  expires_at: number;
  /** When the reserved units went back to the offering (purchase expired or failed). */
  released_at: number | null;
  created_at: number;
}

export interface AuditLogTable {
  seq: Generated<number>;
  id: string;
  /** A portal role, or `operator` for the operator CLI. */
  actor_role: PortalRole | "operator";
  actor_address: string;
  action: string;
  target_type: string;
  target_id: string;
  /** JSON object with the action's inputs and outcome. */
  details: string;
  created_at: number;
}
