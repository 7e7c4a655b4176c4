import { z } from "@hono/zod-openapi";
import type { Kysely } from "kysely";
import type { ServiceSettings } from "../config/settings.js";
import { problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { SessionPresentationTable } from "../store/hosted-tables.js";

/** Placeholder a partner may put in successUrl/cancelUrl; replaced by the session id. */
export const SESSION_ID_PLACEHOLDER = "{CHECKOUT_SESSION_ID}";
export const METADATA_MAX_KEYS = 20;
export const METADATA_KEY_MAX = 40;
export const METADATA_VALUE_MAX = 500;

const RedirectUrl = z
  .string()
  .min(1)
  .max(2000)
  .openapi({
    description: `absolute https: URL (http: in local mode only); ${SESSION_ID_PLACEHOLDER} is replaced by the session id`,
  });

export const MetadataSchema = z
  .record(
    z.string().min(1).max(METADATA_KEY_MAX, `a metadata key is at most ${METADATA_KEY_MAX} characters`),
    z.string().max(METADATA_VALUE_MAX, `a metadata value is at most ${METADATA_VALUE_MAX} characters`),
  )
  .refine((value) => Object.keys(value).length <= METADATA_MAX_KEYS, `at most ${METADATA_MAX_KEYS} keys`)
  .openapi({ description: "string → string, echoed in the session, the order and every event's data.metadata" });

export const CustomerPrefillSchema = z
  .object({
    email: z.string().email().max(254).optional(),
    name: z.string().min(1).max(200).optional(),
    delivery: z
      .object({
        name: z.string().max(200).optional(),
        line1: z.string().max(200).optional(),
        line2: z.string().max(200).optional(),
        city: z.string().max(100).optional(),
        postalCode: z.string().max(20).optional(),
        region: z.string().max(100).optional(),
        country: z
          .string()
          .regex(/^[A-Z]{2}$/, "an ISO 3166-1 alpha-2 country code")
          .optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .openapi({ description: "prefills the hosted form; the customer can change it" });

export const LineItemSchema = z
  .object({
    externalProductId: z.string().min(1).max(200),
    name: z.string().min(1).max(200),
    category: z.string().max(100).optional(),
    quantity: z.number().int().min(1).max(1_000_000),
    unitPriceUsdc: z.string().regex(/^(0|[1-9]\d{0,17})$/, "a non-negative integer of USDC base units written as a string"),
  })
  .strict();

export const HostedOptionsFields = {
  successUrl: RedirectUrl.optional(),
  cancelUrl: RedirectUrl.optional(),
  metadata: MetadataSchema.optional(),
  customer: CustomerPrefillSchema.optional(),
  lineItems: z.array(LineItemSchema).min(1).max(100).optional(),
};

export type HostedOptions = {
  successUrl?: string;
  cancelUrl?: string;
  metadata?: Record<string, string>;
  customer?: z.infer<typeof CustomerPrefillSchema>;
  lineItems?: z.infer<typeof LineItemSchema>[];
};

/**
 * The rules zod cannot see: redirect schemes (http only in local mode) and line
 * items that add up to the total. One 400 naming every bad field; nothing is created.
 */
export function checkHostedOptions(settings: Pick<ServiceSettings, "localMode">, options: HostedOptions, total: bigint): void {
  const errors: { path: string; message: string }[] = [];
  for (const field of ["successUrl", "cancelUrl"] as const) {
    const value = options[field];
    if (value === undefined) continue;
    const problem = redirectUrlProblem(value, settings.localMode);
    if (problem !== undefined) errors.push({ path: field, message: problem });
  }
  if (options.lineItems !== undefined) {
    const sum = options.lineItems.reduce((acc, item) => acc + BigInt(item.quantity) * BigInt(item.unitPriceUsdc), 0n);
    if (sum !== total) {
      errors.push({
        path: "lineItems",
        message: `the line items add up to ${sum} base units, but totalPriceUsdc is ${total}`,
      });
    }
  }
  if (errors.length > 0) throw problems.invalidRequest(errors.map((e) => `${e.path}: ${e.message}`).join("; "), errors);
}

function redirectUrlProblem(value: string, localMode: boolean): string | undefined {
  // The placeholder holds braces, which URL parsing would escape: check the URL with a stand-in.
  let url: URL;
  try {
    url = new URL(value.replaceAll(SESSION_ID_PLACEHOLDER, "cs_placeholder"));
  } catch {
    return "an absolute URL";
  }
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:") return localMode ? undefined : "an https: URL (http: is accepted in local mode only)";
  return "an https: URL";
}

export function withSessionId(url: string, sessionId: string): string {
  return url.replaceAll(SESSION_ID_PLACEHOLDER, encodeURIComponent(sessionId));
}

export async function savePresentation(trx: Kysely<Database>, sessionId: string, options: HostedOptions): Promise<void> {
  if (
    options.successUrl === undefined &&
    options.cancelUrl === undefined &&
    options.customer === undefined &&
    options.lineItems === undefined
  ) {
    return;
  }
  await trx
    .insertInto("session_presentation")
    .values({
      session_id: sessionId,
      success_url: options.successUrl ?? null,
      cancel_url: options.cancelUrl ?? null,
      customer_json: options.customer === undefined ? null : JSON.stringify(options.customer),
      line_items_json: options.lineItems === undefined ? null : JSON.stringify(options.lineItems),
    })
    .execute();
}

export async function readPresentation(db: Kysely<Database>, sessionId: string): Promise<SessionPresentationTable | undefined> {
  return db.selectFrom("session_presentation").selectAll().where("session_id", "=", sessionId).executeTakeFirst();
}

/** The hosted options as the partner sent them, with the placeholder substituted in the URLs. */
export function presentationView(
  sessionId: string,
  row: SessionPresentationTable | undefined,
  metadata: Record<string, string> | null,
) {
  return {
    successUrl: row?.success_url ? withSessionId(row.success_url, sessionId) : null,
    cancelUrl: row?.cancel_url ? withSessionId(row.cancel_url, sessionId) : null,
    metadata: metadata ?? {},
    customer: row?.customer_json ? (JSON.parse(row.customer_json) as NonNullable<HostedOptions["customer"]>) : null,
    lineItems: row?.line_items_json ? (JSON.parse(row.line_items_json) as NonNullable<HostedOptions["lineItems"]>) : null,
  };
}

/** `<base>/checkout/<id>#ct=<token>`: the token rides in the fragment, which browsers never send. */
export function hostedCheckoutUrl(baseUrl: string, sessionId: string, clientToken: string): string {
  return `${baseUrl}/checkout/${encodeURIComponent(sessionId)}#ct=${encodeURIComponent(clientToken)}`;
}
