import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { findEligibility, ineligibilityReasons } from "../../compliance/eligibility.js";
import type { PortalSettings } from "../../config/option-types.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { problems } from "../../http/problem.js";
import {
  findOffering,
  issuerOfOffering,
  offeringView,
  PUBLIC_OFFERING_STATUSES,
  pageOfOfferings,
} from "../../offerings/offerings.js";
import { reconcileOfferings } from "../../purchases/reservations.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { IdParam, jsonResponse, OfferingListSchema, OfferingSchema, PageQuery, problemResponses } from "./schemas.js";

const tags = ["RWA: offerings"];

/** `/api/rwa/offerings`: what anyone may see of offerings that passed review. */
export function offeringRoutes(context: AppContext, portal: PortalSettings) {
  const publicOffering = async (id: string) => {
    const offering = await findOffering(context.store, id);
    if (offering === undefined || !(PUBLIC_OFFERING_STATUSES as readonly string[]).includes(offering.status)) {
      throw problems.notFound(`Offering ${id}`);
    }
    return offering;
  };
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>()
    .openapi(
      declareRoute({
        method: "get",
        path: "/",
        security: CALLERS.anyone,
        tags,
        summary: "List offerings (open ones unless `status` says otherwise)",
        request: { query: PageQuery.extend({ status: z.enum(PUBLIC_OFFERING_STATUSES).default("open") }) },
        responses: { 200: jsonResponse("A page of offerings", OfferingListSchema), ...problemResponses },
      }),
      async (c) => {
        const query = c.req.valid("query");
        return c.json(
          await pageOfOfferings(context.store, {
            statuses: [query.status],
            cursor: query.cursor,
            limit: query.limit,
          }),
          200,
        );
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/{id}",
        security: CALLERS.anyone,
        tags,
        summary: "Read an offering",
        request: { params: IdParam },
        responses: { 200: jsonResponse("The offering", OfferingSchema), ...problemResponses },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        await publicOffering(id);
        await reconcileOfferings(context, { offeringIds: [id], releaseGraceMs: portal.releaseGraceMs });
        const offering = await publicOffering(id);
        return c.json(offeringView(offering, await issuerOfOffering(context.store, offering)), 200);
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/{id}/eligibility",
        tags,
        summary: "Whether the signed-in investor may buy into this offering, and why not",
        security: CALLERS.investor,
        request: { params: IdParam },
        responses: {
          200: jsonResponse("The verdict", z.object({ eligible: z.boolean(), reasons: z.array(z.string()) })),
          ...problemResponses,
        },
      }),
      async (c) => {
        const offering = await publicOffering(c.req.valid("param").id);
        const reasons = ineligibilityReasons(await findEligibility(context.store, c.get("portalSession").address), offering);
        return c.json({ eligible: reasons.length === 0, reasons }, 200);
      },
    );
}
