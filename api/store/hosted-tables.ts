/**
 * Tables of the hosted checkout (migration 0008). Same conventions as `database.ts`:
 * instants as integer milliseconds since epoch, JSON as text.
 */
export interface HostedTables {
  partner_branding: PartnerBrandingTable;
  session_presentation: SessionPresentationTable;
}

export interface PartnerBrandingTable {
  partner_id: string;
  display_name: string | null;
  /** `#rrggbb`. */
  accent_color: string | null;
  support_url: string | null;
  support_email: string | null;
  /** `image/png` or `image/svg+xml`. */
  logo_content_type: string | null;
  logo_base64: string | null;
  /** Hex SHA-256 of the logo bytes: the logo's URL names it, so a new logo is a new URL. */
  logo_sha256: string | null;
  /** JSON array of origins (`https://shop.example`) that may frame the hosted checkout (migration 0012). */
  frame_origins: string | null;
  updated_at: number;
}

/** What the hosted page shows beside the payment: where to send the customer, the prefill and the lines. */
export interface SessionPresentationTable {
  session_id: string;
  success_url: string | null;
  cancel_url: string | null;
  /** `{ email?, name?, delivery? }` */
  customer_json: string | null;
  /** `[{ externalProductId, name, category?, quantity, unitPriceUsdc }]` */
  line_items_json: string | null;
}
