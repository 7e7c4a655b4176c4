import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { ProblemError, problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { PartnerBrandingTable } from "../store/hosted-tables.js";

export const LOGO_MAX_BYTES = 64 * 1024;
export const LOGO_TYPES = ["image/png", "image/svg+xml"] as const;
export type LogoType = (typeof LOGO_TYPES)[number];

export type BrandingUpdate = {
  displayName?: string | null;
  accentColor?: string | null;
  supportUrl?: string | null;
  supportEmail?: string | null;
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
  const partner = await db.selectFrom("partner").select("name").where("id", "=", partnerId).executeTakeFirst();
  const row = await db.selectFrom("partner_branding").selectAll().where("partner_id", "=", partnerId).executeTakeFirst();
  return {
    displayName: row?.display_name ?? partner?.name ?? "the shop",
    logoUrl: row?.logo_sha256 ? logoPath(partnerId, row.logo_sha256) : null,
    accentColor: row?.accent_color ?? null,
    supportUrl: row?.support_url ?? null,
    supportEmail: row?.support_email ?? null,
  };
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
  await upsert(db, partnerId, values, now);
}

/**
 * Stores a logo after checking what it is: a PNG by its signature, an SVG that is
 * an `<svg>` document without script, event handlers, external references or
 * `javascript:`. It is served with a CSP that forbids script anyway (`logoHeaders`).
 */
export async function setLogo(
  db: Kysely<Database>,
  partnerId: string,
  logo: { contentType: string; bytes: Uint8Array },
): Promise<string> {
  const type = logo.contentType.split(";")[0]!.trim().toLowerCase();
  if (!(LOGO_TYPES as readonly string[]).includes(type)) {
    throw new ProblemError({
      status: 415,
      code: "unsupported_logo_type",
      title: "The logo must be a PNG or an SVG",
      detail: `Send Content-Type image/png or image/svg+xml (got ${type || "none"}).`,
    });
  }
  if (logo.bytes.byteLength === 0) throw problems.invalidRequest("logo: the body is empty", [{ path: "logo", message: "empty" }]);
  if (logo.bytes.byteLength > LOGO_MAX_BYTES) throw logoTooLarge(logo.bytes.byteLength);
  const problem = type === "image/png" ? pngProblem(logo.bytes) : svgProblem(Buffer.from(logo.bytes).toString("utf8"));
  if (problem !== undefined) throw problems.invalidRequest(`logo: ${problem}`, [{ path: "logo", message: problem }]);
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
  return new ProblemError({
    status: 413,
    code: "logo_too_large",
    title: "The logo is too large",
    detail: `A logo is at most ${LOGO_MAX_BYTES} bytes (got ${size}).`,
  });
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

function svgProblem(text: string): string | undefined {
  if (!/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<svg[\s>]/i.test(text)) return "not an SVG document";
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) return "an SVG may not declare a DOCTYPE or entities";
  if (/<\s*(script|foreignObject|iframe|embed|object)\b/i.test(text)) return "an SVG may not hold script or embedded content";
  if (/\son[a-z]+\s*=/i.test(text)) return "an SVG may not hold event handlers";
  if (/javascript:|data:text\/html/i.test(text)) return "an SVG may not hold javascript: links";
  if (/(href|src)\s*=\s*["']\s*(https?:)?\/\//i.test(text) || /url\(\s*["']?\s*(https?:)?\/\//i.test(text)) {
    return "an SVG may not reference other hosts (hosted pages make no external requests)";
  }
  return undefined;
}
