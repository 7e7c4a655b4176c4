/** Tables of migration 0010 (partner members, the console's partner portal). */
export interface MemberTables {
  partner_member: PartnerMemberTable;
}

export type PartnerMemberRole = "admin" | "member";

export interface PartnerMemberTable {
  partner_id: string;
  /** Lower-case hex. */
  address: string;
  role: PartnerMemberRole;
  created_at: number;
}
