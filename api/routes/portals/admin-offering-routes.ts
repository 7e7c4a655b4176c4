import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { problems } from "../../http/problem.js";
import {
  approveOffering,
  closeOffering,
  findOffering,
  issuerOfOffering,
  offeringView,
  pageOfOfferings,
  pauseOffering,
  rejectOffering,
  resumeOffering,
} from "../../offerings/offerings.js";
import { type AdminEnv, adminRouteKit } from "./admin-route-kit.js";
import { IdParam, jsonBody, jsonResponse, OfferingListSchema, OfferingSchema, PageQuery, problemResponses } from "./schemas.js";

/** `/api/admin/offerings`: the review queue and every offering's lifecycle. Every change is written to the audit log with the change. */
export function adminOfferingRoutes(context: AppContext) {
  const { route, actorOf } = adminRouteKit(context);
  const offeringAnswer = async (offering: Awaited<ReturnType<typeof approveOffering>>) =>
    offeringView(offering, await issuerOfOffering(context.store, offering));
  const offeringAction = (action: "approve" | "reject" | "pause" | "resume" | "close", summary: string, reasonRequired = false) =>
    route({
      method: "post",
      path: `/offerings/{id}/${action}`,
      summary,
      request: {
        params: IdParam,
        body: reasonRequired
          ? jsonBody(z.object({ reason: z.string().min(1).max(1000) }))
          : { ...jsonBody(z.object({ reason: z.string().min(1).max(1000).optional() })), required: false },
      },
      responses: { 200: jsonResponse("The offering", OfferingSchema), ...problemResponses },
    });

  return new OpenAPIHono<AdminEnv>()
    .openapi(
      route({
        method: "get",
        path: "/offerings",
        summary: "Offerings in any state (e.g. `status=in_review` for the review queue)",
        request: {
          query: PageQuery.extend({
            status: z.enum(["draft", "in_review", "rejected", "open", "paused", "closed"]).optional(),
          }),
        },
        responses: { 200: jsonResponse("A page of offerings", OfferingListSchema), ...problemResponses },
      }),
      async (c) => {
        const query = c.req.valid("query");
        return c.json(
          await pageOfOfferings(context.store, {
            statuses: query.status === undefined ? undefined : [query.status],
            cursor: query.cursor,
            limit: query.limit,
          }),
          200,
        );
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/offerings/{id}",
        summary: "Any offering",
        request: { params: IdParam },
        responses: { 200: jsonResponse("The offering", OfferingSchema), ...problemResponses },
      }),
      async (c) => {
        const offering = await findOffering(context.store, c.req.valid("param").id);
        if (offering === undefined) throw problems.notFound(`Offering ${c.req.valid("param").id}`);
        return c.json(await offeringAnswer(offering), 200);
      },
    )
    .openapi(offeringAction("approve", "Approve an offering in review (→ open)"), async (c) =>
      c.json(await offeringAnswer(await approveOffering(context, actorOf(c), c.req.valid("param").id)), 200),
    )
    .openapi(offeringAction("reject", "Reject an offering in review, with a reason the issuer sees", true), async (c) =>
      c.json(
        await offeringAnswer(
          await rejectOffering(context.store, actorOf(c), c.req.valid("param").id, c.req.valid("json").reason as string),
        ),
        200,
      ),
    )
    .openapi(offeringAction("pause", "Pause an open offering (only an admin can lift it)"), async (c) =>
      c.json(
        await offeringAnswer(
          await pauseOffering(context.store, actorOf(c), c.req.valid("param").id, undefined, c.req.valid("json").reason),
        ),
        200,
      ),
    )
    .openapi(offeringAction("resume", "Reopen a paused offering"), async (c) =>
      c.json(await offeringAnswer(await resumeOffering(context.store, actorOf(c), c.req.valid("param").id)), 200),
    )
    .openapi(offeringAction("close", "Close an offering for good"), async (c) =>
      c.json(
        await offeringAnswer(
          await closeOffering(context.store, actorOf(c), c.req.valid("param").id, undefined, c.req.valid("json").reason),
        ),
        200,
      ),
    );
}
