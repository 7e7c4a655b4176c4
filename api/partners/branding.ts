import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { type ProblemError, problem, problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { PartnerBrandingTable } from "../store/hosted-tables.js";
import { findPartner } from "./api-keys.js";
import { svgLogoProblem } from "./svg-logo.js";

export const LOGO_MAX_BYTES = 64 * 1024;
export const LOGO_TYPES = ["image/png", "image/svg+xml"] as const;
export type LogoType = (typeof LOGO_TYPES)[number];

export type BrandingUpdate = {
  displayName?: string | null;
  accentColor?: string | null;
  supportUrl?: string | null;
  supportEmail?: string | null;
  /** Origins (already checked by `parseFrameOrigin`) that may frame the hosted checkout; `[]` or null clears. */
  frameOrigins?: string[] | null;
};

/** How the hosted and claim pages present a partner (its account name when no display name is set). */
export type BrandingView = {
  displayName: string;
  logoUrl: string | null;
  accentColor: string | null;
  supportUrl: string | null;
  supportEmail: string | null;
};

export async function readBranding(db: Kysely<Database>, partnerId: string): Promise<BrandingView> {
  const partner = await findPartner(db, partnerId);
  const row = await db.selectFrom("partner_branding").selectAll().where("partner_id", "=", partnerId).executeTakeFirst();
  return brandingView(partnerId, partner?.name, row);
}

/** The branding as the pages show it, from its row and the partner's account name (read with a session, or here). */
export function brandingView(
  partnerId: string,
  partnerName: string | undefined,
  row: Pick<PartnerBrandingTable, "display_name" | "accent_color" | "support_url" | "support_email" | "logo_sha256"> | undefined,
): BrandingView {
  return {
    displayName: row?.display_name ?? partnerName ?? "the shop",
    logoUrl: row?.logo_sha256 ? logoPath(partnerId, row.logo_sha256) : null,
    accentColor: row?.accent_color ?? null,
    supportUrl: row?.support_url ?? null,
    supportEmail: row?.support_email ?? null,
  };
}

/** The partner's own view of its branding: what the pages show, and the origins that may frame the checkout. */
export async function readPartnerBranding(
  db: Kysely<Database>,
  partnerId: string,
): Promise<BrandingView & { frameOrigins: string[] }> {
  return { ...(await readBranding(db, partnerId)), frameOrigins: await readFrameOrigins(db, partnerId) };
}

/** The origins the partner declared may frame its hosted checkout (the checkout component's pages). */
export async function readFrameOrigins(db: Kysely<Database>, partnerId: string): Promise<string[]> {
  const row = await db
    .selectFrom("partner_branding")
    .select("frame_origins")
    .where("partner_id", "=", partnerId)
    .executeTakeFirst();
  if (!row?.frame_origins) return [];
  const parsed: unknown = JSON.parse(row.frame_origins);
  return Array.isArray(parsed) ? parsed.filter((origin): origin is string => typeof origin === "string") : [];
}

/** The logo's path names its hash: a new logo is a new URL, so it can be cached for long. */
export function logoPath(partnerId: string, sha256: string): string {
  return `/branding/${encodeURIComponent(partnerId)}/logo/${sha256}`;
}

export async function updateBranding(db: Kysely<Database>, partnerId: string, update: BrandingUpdate): Promise<void> {
  const now = Date.now();
  const values: Partial<PartnerBrandingTable> = {};
  if (update.displayName !== undefined) values.display_name = update.displayName;
  if (update.accentColor !== undefined) values.accent_color = update.accentColor?.toLowerCase() ?? null;
  if (update.supportUrl !== undefined) values.support_url = update.supportUrl;
  if (update.supportEmail !== undefined) values.support_email = update.supportEmail;
  if (update.frameOrigins !== undefined) {
    values.frame_origins = update.frameOrigins?.length ? JSON.stringify([...new Set(update.frameOrigins)]) : null;
  }
  await upsert(db, partnerId, values, now);
}

/**
 * Stores a logo after checking what it is: a PNG by its signature, an SVG parsed as
 * XML whose every element and attribute is on the drawing allow-list of
 * `svgLogoProblem` (no script, event handler, external reference, embedded content,
 * DOCTYPE or entity). It is served with a CSP that forbids script anyway
 * (`logoHeaders`). A refused logo is `invalid_request` whose detail names what was refused.
 */
export async function setLogo(
  db: Kysely<Database>,
  partnerId: string,
  logo: { contentType: string; bytes: Uint8Array },
): Promise<string> {
  const type = logo.contentType.split(";")[0]!.trim().toLowerCase();
  if (!(LOGO_TYPES as readonly string[]).includes(type)) {
    throw problem("unsupported_logo_type", `Send Content-Type image/png or image/svg+xml (got ${type || "none"}).`);
  }
  if (logo.bytes.byteLength === 0) throw problems.invalidRequest("logo: the body is empty", [{ path: "logo", message: "empty" }]);
  if (logo.bytes.byteLength > LOGO_MAX_BYTES) throw logoTooLarge(logo.bytes.byteLength);
  const refusal = type === "image/png" ? pngProblem(logo.bytes) : svgProblem(logo.bytes);
  if (refusal !== undefined) throw problems.invalidRequest(`logo: ${refusal}`, [{ path: "logo", message: refusal }]);
  const sha256 = createHash("sha256").update(logo.bytes).digest("hex");
  await upsert(
    db,
    partnerId,
    { logo_content_type: type, logo_base64: Buffer.from(logo.bytes).toString("base64"), logo_sha256: sha256 },
    Date.now(),
  );
  return sha256;
}

export function logoTooLarge(size: number): ProblemError {
  return problem("logo_too_large", `A logo is at most ${LOGO_MAX_BYTES} bytes (got ${size}).`);
}

export async function removeLogo(db: Kysely<Database>, partnerId: string): Promise<void> {
  await upsert(db, partnerId, { logo_content_type: null, logo_base64: null, logo_sha256: null }, Date.now());
}

export async function readLogo(
  db: Kysely<Database>,
  params: { partnerId: string; sha256: string },
): Promise<{ contentType: LogoType; bytes: Buffer } | undefined> {
  const row = await db
    .selectFrom("partner_branding")
    .select(["logo_content_type", "logo_base64"])
    .where("partner_id", "=", params.partnerId)
    .where("logo_sha256", "=", params.sha256)
    .executeTakeFirst();
  if (!row?.logo_base64 || !row.logo_content_type) return undefined;
  return { contentType: row.logo_content_type as LogoType, bytes: Buffer.from(row.logo_base64, "base64") };
}

/** Even opened on its own, a logo (an SVG above all) can run nothing and load nothing. */
export function logoHeaders(contentType: LogoType): Record<string, string> {
  return {
    "Content-Type": contentType,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Cross-Origin-Resource-Policy": "same-origin",
  };
}

async function upsert(db: Kysely<Database>, partnerId: string, values: Partial<PartnerBrandingTable>, now: number) {
  await db
    .insertInto("partner_branding")
    .values({
      partner_id: partnerId,
      display_name: null,
      accent_color: null,
      support_url: null,
      support_email: null,
      logo_content_type: null,
      logo_base64: null,
      logo_sha256: null,
      frame_origins: null,
      ...values,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("partner_id").doUpdateSet({ ...values, updated_at: now }))
    .execute();
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function pngProblem(bytes: Uint8Array): string | undefined {
  return PNG_SIGNATURE.every((byte, index) => bytes[index] === byte) ? undefined : "not a PNG file";
}

function svgProblem(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return "an SVG logo must be UTF-8 text";
  }
  return svgLogoProblem(text);
}
