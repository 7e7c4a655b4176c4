import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import {
  eligibilityView,
  findEligibility,
  KYC_STATUSES,
  pageOfEligibility,
  setEligibility,
  setWalletFrozen,
} from "../../compliance/eligibility.js";
import { type AdminEnv, adminRouteKit } from "./admin-route-kit.js";
import {
  AddressSchema,
  EligibilitySchema,
  IsoInstantSchema,
  JurisdictionSchema,
  jsonBody,
  jsonResponse,
  PageQuery,
  problemResponses,
} from "./schemas.js";

const AddressParam = z.object({ address: AddressSchema });
const EligibilityBody = z.object({
  kycStatus: z.enum(KYC_STATUSES),
  jurisdiction: JurisdictionSchema.nullable(),
  accredited: z.boolean().optional(),
  accreditationExpiresAt: IsoInstantSchema.nullable().optional(),
});

/** `/api/admin/investors`: investors' eligibility records (KYC, jurisdiction, accreditation, freeze). Every change is written to the audit log with the change. */
export function adminInvestorRoutes(context: AppContext) {
  const { route, actorOf } = adminRouteKit(context);
  return new OpenAPIHono<AdminEnv>()
    .openapi(
      route({
        method: "get",
        path: "/investors",
        summary: "Investor eligibility records",
        request: {
          query: PageQuery.extend({ kycStatus: z.enum(KYC_STATUSES).optional(), frozen: z.enum(["true", "false"]).optional() }),
        },
        responses: {
          200: jsonResponse(
            "A page of records",
            z.object({ data: z.array(EligibilitySchema), nextCursor: z.string().nullable() }),
          ),
          ...problemResponses,
        },
      }),
      async (c) => {
        const query = c.req.valid("query");
        return c.json(
          await pageOfEligibility(context.store, {
            cursor: query.cursor,
            limit: query.limit,
            kycStatus: query.kycStatus,
            frozen: query.frozen === undefined ? undefined : query.frozen === "true",
          }),
          200,
        );
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/investors/{address}",
        summary: "One investor's eligibility",
        request: { params: AddressParam },
        responses: { 200: jsonResponse("The record", EligibilitySchema), ...problemResponses },
      }),
      async (c) => {
        const { address } = c.req.valid("param");
        return c.json(eligibilityView(address, await findEligibility(context.store, address)), 200);
      },
    )
    .openapi(
      route({
        method: "put",
        path: "/investors/{address}/eligibility",
        summary: "Set an investor's KYC status, jurisdiction and accreditation",
        request: { params: AddressParam, body: jsonBody(EligibilityBody) },
        responses: { 200: jsonResponse("The record", EligibilitySchema), ...problemResponses },
      }),
      async (c) => {
        const { address } = c.req.valid("param");
        const body = c.req.valid("json");
        const expires = body.accreditationExpiresAt == null ? null : Date.parse(body.accreditationExpiresAt);
        const record = await setEligibility(context.store, actorOf(c), {
          address,
          kycStatus: body.kycStatus,
          jurisdiction: body.jurisdiction,
          accredited: body.accredited,
          accreditationExpiresAt: expires,
        });
        return c.json(eligibilityView(address, record), 200);
      },
    )
    .openapi(
      route({
        method: "post",
        path: "/investors/{address}/freeze",
        summary: "Freeze a wallet: no new purchases or certificate claims; its certificates show as frozen",
        request: { params: AddressParam, body: jsonBody(z.object({ reason: z.string().min(1).max(1000) })) },
        responses: { 200: jsonResponse("The record", EligibilitySchema), ...problemResponses },
      }),
      async (c) => {
        const { address } = c.req.valid("param");
        const record = await setWalletFrozen(context.store, actorOf(c), {
          address,
          frozen: true,
          reason: c.req.valid("json").reason,
        });
        return c.json(eligibilityView(address, record), 200);
      },
    )
    .openapi(
      route({
        method: "post",
        path: "/investors/{address}/unfreeze",
        summary: "Lift a freeze",
        request: { params: AddressParam },
        responses: { 200: jsonResponse("The record", EligibilitySchema), ...problemResponses },
      }),
      async (c) => {
        const { address } = c.req.valid("param");
        return c.json(
          eligibilityView(address, await setWalletFrozen(context.store, actorOf(c), { address, frozen: false })),
          200,
        );
      },
    );
}
