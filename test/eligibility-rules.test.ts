import { describe, expect, it } from "vitest";
import { eligibilityView, ineligibilityReasons, jurisdictionList } from "../api/compliance/eligibility.js";
import type { InvestorEligibilityTable, OfferingTable } from "../api/store/portal-tables.js";

// Fast unit tests of the pure eligibility rules (no store, no chain).

type Rules = Pick<OfferingTable, "require_kyc" | "require_accreditation" | "allowed_jurisdictions" | "blocked_jurisdictions">;
const open: Rules = { require_kyc: 0, require_accreditation: 0, allowed_jurisdictions: null, blocked_jurisdictions: null };
const strict: Rules = {
  require_kyc: 1,
  require_accreditation: 1,
  allowed_jurisdictions: '["DE","FR"]',
  blocked_jurisdictions: null,
};
const NOW = 1_800_000_000_000;
const record = (over: Partial<InvestorEligibilityTable> = {}): InvestorEligibilityTable => ({
  address: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
  kyc_status: "approved",
  jurisdiction: "DE",
  accredited: 1,
  accreditation_expires_at: null,
  frozen_at: null,
  frozen_reason: null,
  updated_by: "0x0000000000000000000000000000000000000001",
  updated_at: 0,
  ...over,
});

describe("ineligibilityReasons", () => {
  it("lets anyone buy an offering without rules, even a wallet with no record", () => {
    expect(ineligibilityReasons(undefined, open, NOW)).toEqual([]);
    expect(ineligibilityReasons(record({ kyc_status: "rejected", jurisdiction: null, accredited: 0 }), open, NOW)).toEqual([]);
  });

  it("passes a complete, approved, accredited investor in an allowed jurisdiction", () => {
    expect(ineligibilityReasons(record(), strict, NOW)).toEqual([]);
  });

  it("names every unmet rule of a wallet without a record", () => {
    expect(ineligibilityReasons(undefined, strict, NOW)).toEqual([
      "kyc_required",
      "jurisdiction_unknown",
      "accreditation_required",
    ]);
  });

  it("refuses a frozen wallet whatever else holds, also on an offering without rules", () => {
    expect(ineligibilityReasons(record({ frozen_at: 1 }), open, NOW)).toEqual(["wallet_frozen"]);
    expect(ineligibilityReasons(record({ frozen_at: 1 }), strict, NOW)).toEqual(["wallet_frozen"]);
  });

  it("requires approved KYC, not pending, rejected or needing an update", () => {
    for (const kyc_status of ["pending", "rejected", "needs_update"] as const) {
      expect(ineligibilityReasons(record({ kyc_status }), strict, NOW)).toEqual(["kyc_required"]);
    }
  });

  it("applies allow and block lists of jurisdictions", () => {
    expect(ineligibilityReasons(record({ jurisdiction: "US" }), strict, NOW)).toEqual(["jurisdiction_not_allowed"]);
    const blockUs: Rules = { ...open, blocked_jurisdictions: '["US"]' };
    expect(ineligibilityReasons(record({ jurisdiction: "US" }), blockUs, NOW)).toEqual(["jurisdiction_blocked"]);
    expect(ineligibilityReasons(record({ jurisdiction: "DE" }), blockUs, NOW)).toEqual([]);
    expect(ineligibilityReasons(record({ jurisdiction: null }), blockUs, NOW)).toEqual(["jurisdiction_unknown"]);
  });

  it("treats an accreditation as expired at its expiry instant, not a millisecond later", () => {
    expect(ineligibilityReasons(record({ accreditation_expires_at: NOW + 1 }), strict, NOW)).toEqual([]);
    expect(ineligibilityReasons(record({ accreditation_expires_at: NOW }), strict, NOW)).toEqual(["accreditation_expired"]);
    expect(ineligibilityReasons(record({ accredited: 0, accreditation_expires_at: NOW + 1 }), strict, NOW)).toEqual([
      "accreditation_required",
    ]);
  });
});

describe("eligibility views", () => {
  it("reads jurisdiction lists, null as none", () => {
    expect(jurisdictionList(null)).toEqual([]);
    expect(jurisdictionList('["DE","FR"]')).toEqual(["DE", "FR"]);
  });

  it("shows a wallet without a record as pending, checksummed", () => {
    const view = eligibilityView("0x70997970c51812dc3a010c7d01b50e0d17dc79c8", undefined);
    expect(view.address).toBe("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    expect(view.kycStatus).toBe("pending");
  });
});

describe("eligibility: reasons together and their precedence", () => {
  const rulesWith = (change: Partial<Rules>): Rules => ({ ...open, ...change });

  it.each([
    [
      "a frozen wallet also lacking KYC and accreditation lists all three, frozen first",
      record({ frozen_at: 1, kyc_status: "pending", accredited: 0 }),
      rulesWith({ require_kyc: 1, require_accreditation: 1 }),
      ["wallet_frozen", "kyc_required", "accreditation_required"],
    ],
    [
      "a jurisdiction both allowed and blocked is blocked",
      record(),
      rulesWith({ allowed_jurisdictions: '["DE","FR"]', blocked_jurisdictions: '["DE"]' }),
      ["jurisdiction_blocked"],
    ],
    [
      "a jurisdiction outside the allow list is not_allowed, even if also blocked (one jurisdiction reason)",
      record({ jurisdiction: "US" }),
      rulesWith({ allowed_jurisdictions: '["DE"]', blocked_jurisdictions: '["US"]' }),
      ["jurisdiction_not_allowed"],
    ],
    ["an empty allow list restricts nothing", record({ jurisdiction: "US" }), rulesWith({ allowed_jurisdictions: "[]" }), []],
    [
      "an expired accreditation does not matter where none is required",
      record({ accreditation_expires_at: NOW - 1 }),
      rulesWith({ require_kyc: 1 }),
      [],
    ],
    [
      "an accreditation expiry stored as an int8 string is compared as a number",
      record({ accreditation_expires_at: String(NOW) as unknown as number }),
      rulesWith({ require_accreditation: 1 }),
      ["accreditation_expired"],
    ],
  ] as const)("%s", (_case, investor, offering, reasons) => {
    expect(ineligibilityReasons(investor, offering, NOW)).toEqual(reasons);
  });
});
