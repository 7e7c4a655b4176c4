import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { eligibilityView, findEligibility } from "../../compliance/eligibility.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { EligibilitySchema, jsonResponse, problemResponses } from "./schemas.js";

/** `/api/investor`: the signed-in investor's own compliance record (read only; admins set it). */
export function investorRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    declareRoute({
      method: "get",
      path: "/profile",
      tags: ["RWA: investor purchases"],
      summary: "The investor's eligibility as compliance keeps it (KYC, jurisdiction, accreditation, freeze)",
      security: CALLERS.investor,
      responses: { 200: jsonResponse("The investor's record", EligibilitySchema), ...problemResponses },
    }),
    async (c) => {
      const address = c.get("portalSession").address;
      return c.json(eligibilityView(address, await findEligibility(context.store, address)), 200);
    },
  );
}
