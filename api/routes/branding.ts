import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { MAX_FRAME_ORIGINS, parseFrameOrigin } from "../hosted/frame-origins.js";
import { admit, CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problems } from "../http/problem.js";
import {
  LOGO_MAX_BYTES,
  logoHeaders,
  logoTooLarge,
  readLogo,
  readPartnerBranding,
  removeLogo,
  setLogo,
  updateBranding,
} from "../partners/branding.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import type { AppEnv } from "./app-env.js";

const BrandingSchema = z
  .object({
    displayName: z.string(),
    logoUrl: z.string().nullable(),
    accentColor: z.string().nullable(),
    supportUrl: z.string().nullable(),
    supportEmail: z.string().nullable(),
    frameOrigins: z
      .array(z.string())
      .openapi({ description: "Origins whose pages may frame the hosted checkout (the checkout component's page)." }),
  })
  .openapi("Branding");

const json = { "application/json": { schema: BrandingSchema } };

const readRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "Your branding on the hosted checkout and claim pages",
  security: CALLERS.partnerRead,
  responses: { 200: { description: "Branding", content: json } },
});

const updateRoute = declareRoute({
  method: "patch",
  path: "/",
  summary: "Set display name, accent colour, support contacts and the origins that may frame the checkout (null clears one)",
  security: CALLERS.partnerAdminChange,
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              displayName: z.string().min(1).max(100).nullable().optional(),
              accentColor: z
                .string()
                .regex(/^#[0-9a-fA-F]{6}$/, "a hex colour such as #1a73e8")
                .nullable()
                .optional(),
              supportUrl: z.string().max(2000).nullable().optional(),
              supportEmail: z.string().email().max(254).nullable().optional(),
              frameOrigins: z
                .array(z.string().max(300))
                .max(MAX_FRAME_ORIGINS)
                .nullable()
                .optional()
                .openapi({
                  description:
                    "Origins (`https://shop.example`) of your pages that mount the checkout component; only these may frame " +
                    "the hosted checkout. Replaces the list; `[]` or null clears it.",
                }),
            })
            .strict(),
        },
      },
    },
  },
  responses: { 200: { description: "Branding", content: json } },
});

const logoRoute = declareRoute({
  method: "put",
  path: "/logo",
  summary: `Upload the logo: the raw bytes as the body, Content-Type image/png or image/svg+xml, at most ${LOGO_MAX_BYTES} bytes`,
  description:
    "Served from this service's own origin (hosted pages make no external requests). An SVG is parsed as XML and refused " +
    "(`invalid_request`, its detail naming what) unless every element and attribute is on a drawing allow-list: no script, event handlers, " +
    "foreignObject, style elements, DOCTYPE or entities, and references only to its own elements (`#id`, `url(#id)`). " +
    "Every logo is served with a CSP that forbids script.",
  security: CALLERS.partnerAdminChange,
  responses: {
    200: { description: "Branding", content: json },
    ...errorResponses("unsupported_logo_type", "logo_too_large", "invalid_request"),
  },
});

const removeLogoRoute = declareRoute({
  method: "delete",
  path: "/logo",
  summary: "Remove the logo",
  security: CALLERS.partnerAdminChange,
  responses: { 200: { description: "Branding", content: json } },
});

/** `/v1/branding`: the partner's name, logo, colour and support contacts on the hosted pages. */
export function brandingRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(readRoute, async (c) => c.json(await readPartnerBranding(context.store, c.get("partner").id), 200))
    .openapi(updateRoute, async (c) => {
      const body = c.req.valid("json");
      if (body.supportUrl != null) {
        const problem = supportUrlProblem(body.supportUrl, context.settings.localMode);
        if (problem !== undefined)
          throw problems.invalidRequest(`supportUrl: ${problem}`, [{ path: "supportUrl", message: problem }]);
      }
      const frameOrigins = body.frameOrigins?.map((value, index) => {
        const parsed = parseFrameOrigin(value, context.settings.localMode);
        if ("problem" in parsed) {
          const path = `frameOrigins.${index}`;
          throw problems.invalidRequest(`${path}: ${parsed.problem}`, [{ path, message: parsed.problem }]);
        }
        return parsed.origin;
      });
      await updateBranding(context.store, c.get("partner").id, { ...body, frameOrigins });
      return c.json(await readPartnerBranding(context.store, c.get("partner").id), 200);
    })
    .openapi(logoRoute, async (c) => {
      const declared = Number(c.req.header("Content-Length") ?? "0");
      // Refused before reading when the declared size says so.
      if (declared > LOGO_MAX_BYTES) throw logoTooLarge(declared);
      const bytes = new Uint8Array(await c.req.arrayBuffer());
      await setLogo(context.store, c.get("partner").id, { contentType: c.req.header("Content-Type") ?? "", bytes });
      return c.json(await readPartnerBranding(context.store, c.get("partner").id), 200);
    })
    .openapi(removeLogoRoute, async (c) => {
      await removeLogo(context.store, c.get("partner").id);
      return c.json(await readPartnerBranding(context.store, c.get("partner").id), 200);
    });
}

/** `GET /branding/:partnerId/logo/:sha256`: public, like any shop's logo. */
export function logoRoutes(context: AppContext) {
  const app = new OpenAPIHono<AppEnv>();
  app.get("/branding/:partnerId/logo/:sha256", admit(CALLERS.anyone), async (c) => {
    const sha256 = c.req.param("sha256");
    const partnerId = c.req.param("partnerId");
    if (!/^[0-9a-f]{64}$/.test(sha256) || partnerId.length > 100) throw problems.notFound("Logo");
    const logo = await readLogo(context.store, { partnerId, sha256 });
    if (logo === undefined) throw problems.notFound("Logo");
    return c.body(new Uint8Array(logo.bytes), 200, logoHeaders(logo.contentType));
  });
  return app;
}

function supportUrlProblem(value: string, localMode: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "an absolute URL";
  }
  if (url.protocol === "https:" || (localMode && url.protocol === "http:")) return undefined;
  return localMode ? "an https: or http: URL" : "an https: URL";
}
