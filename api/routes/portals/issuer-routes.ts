import { type createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppContext } from "../../app-context.js";
import type { PortalActor } from "../../audit/audit-log.js";
import { issuerOfWallet, issuerView } from "../../compliance/issuers.js";
import type { PortalSettings } from "../../config/option-types.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { toCsv } from "../../http/csv.js";
import {
  closeOffering,
  createOfferingDraft,
  offeringView,
  ownOffering,
  pageOfOfferings,
  pauseOffering,
  resumeOffering,
  submitOffering,
  updateOfferingDraft,
} from "../../offerings/offerings.js";
import { listHolders } from "../../purchases/holders.js";
import { listPurchases, loadPurchaseRecords, pageOfPurchases, purchaseView } from "../../purchases/purchases.js";
import { reconcileOfferings } from "../../purchases/reservations.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { OfferingBody, offeringInput } from "./offering-input.js";
import {
  IdParam,
  IssuerSchema,
  jsonBody,
  jsonResponse,
  OfferingListSchema,
  OfferingSchema,
  PageQuery,
  PurchaseListSchema,
  problemResponses,
} from "./schemas.js";

const HolderSchema = z.object({
  investor: z.string(),
  units: z.number().int(),
  totalPaidUsdc: z.string(),
  purchases: z.number().int(),
  kycStatus: z.string(),
  jurisdiction: z.string().nullable(),
  frozen: z.boolean(),
});
const ReasonBody = z.object({ reason: z.string().min(1).max(1000).optional() });
const csvResponse = (description: string) => ({ description, content: { "text/csv": { schema: z.string() } } });

type IssuerEnv = AppEnv & { Variables: PortalVariables };

/** `/api/issuer`: an issuer's own offerings, their purchases and holder register. */
export function issuerRoutes(context: AppContext, portal: PortalSettings) {
  const tags = ["Issuer portal"];
  const actorOf = (c: Context<IssuerEnv>): PortalActor => ({ role: "issuer", address: c.get("portalSession").address });
  const issuerOf = (c: Context<IssuerEnv>) => issuerOfWallet(context.store, c.get("portalSession").address);
  /** The offering, if it is the signed-in issuer's (else 404), with its reservations reconciled. */
  const mine = async (c: Context<IssuerEnv>, id: string) => {
    const issuer = await issuerOf(c);
    await ownOffering(context.store, issuer, id);
    await reconcileOfferings(context, { offeringIds: [id], releaseGraceMs: portal.releaseGraceMs });
    return { issuer, offering: await ownOffering(context.store, issuer, id) };
  };
  const route = <config extends Parameters<typeof createRoute>[0]>(config: config) =>
    declareRoute({ ...config, tags, security: CALLERS.issuer });
  const transitionRoute = (action: "submit" | "pause" | "resume" | "close", summary: string) =>
    route({
      method: "post",
      path: `/offerings/{id}/${action}`,
      summary,
      request: { params: IdParam, body: { ...jsonBody(ReasonBody), required: false } },
      responses: { 200: jsonResponse("The offering", OfferingSchema), ...problemResponses },
    });

  return new OpenAPIHono<IssuerEnv>()
    .openapi(
      route({
        method: "get",
        path: "/profile",
        summary: "The signed-in issuer",
        responses: { 200: jsonResponse("The issuer", IssuerSchema), ...problemResponses },
      }),
      async (c) => c.json(issuerView(await issuerOf(c)), 200),
    )
    .openapi(
      route({
        method: "post",
        path: "/offerings",
        summary: "Draft an offering",
        request: { body: jsonBody(OfferingBody) },
        responses: { 201: jsonResponse("The draft", OfferingSchema), ...problemResponses },
      }),
      async (c) => {
        const issuer = await issuerOf(c);
        const offering = await createOfferingDraft(context, actorOf(c), issuer, offeringInput(c.req.valid("json")));
        return c.json(offeringView(offering, issuer), 201);
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/offerings",
        summary: "The issuer's offerings in every state",
        request: { query: PageQuery },
        responses: { 200: jsonResponse("A page of offerings", OfferingListSchema), ...problemResponses },
      }),
      async (c) => {
        const query = c.req.valid("query");
        const issuer = await issuerOf(c);
        return c.json(
          await pageOfOfferings(context.store, {
            issuerId: issuer.id,
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
        summary: "One of the issuer's offerings",
        request: { params: IdParam },
        responses: { 200: jsonResponse("The offering", OfferingSchema), ...problemResponses },
      }),
      async (c) => {
        const { issuer, offering } = await mine(c, c.req.valid("param").id);
        return c.json(offeringView(offering, issuer), 200);
      },
    )
    .openapi(
      route({
        method: "put",
        path: "/offerings/{id}",
        summary: "Replace a draft (or a rejected offering before resubmitting it)",
        request: { params: IdParam, body: jsonBody(OfferingBody) },
        responses: { 200: jsonResponse("The draft", OfferingSchema), ...problemResponses },
      }),
      async (c) => {
        const issuer = await issuerOf(c);
        const offering = await updateOfferingDraft(
          context,
          actorOf(c),
          issuer,
          c.req.valid("param").id,
          offeringInput(c.req.valid("json")),
        );
        return c.json(offeringView(offering, issuer), 200);
      },
    )
    .openapi(transitionRoute("submit", "Submit a draft for review (→ in_review)"), async (c) => {
      const issuer = await issuerOf(c);
      return c.json(offeringView(await submitOffering(context.store, actorOf(c), issuer, c.req.valid("param").id), issuer), 200);
    })
    .openapi(transitionRoute("pause", "Pause an open offering: no new purchases"), async (c) => {
      const issuer = await issuerOf(c);
      const offering = await pauseOffering(
        context.store,
        actorOf(c),
        c.req.valid("param").id,
        issuer,
        c.req.valid("json").reason,
      );
      return c.json(offeringView(offering, issuer), 200);
    })
    .openapi(transitionRoute("resume", "Reopen an offering the issuer paused"), async (c) => {
      const issuer = await issuerOf(c);
      return c.json(offeringView(await resumeOffering(context.store, actorOf(c), c.req.valid("param").id, issuer), issuer), 200);
    })
    .openapi(transitionRoute("close", "Close an offering for good"), async (c) => {
      const issuer = await issuerOf(c);
      const offering = await closeOffering(
        context.store,
        actorOf(c),
        c.req.valid("param").id,
        issuer,
        c.req.valid("json").reason,
      );
      return c.json(offeringView(offering, issuer), 200);
    })
    .openapi(
      route({
        method: "get",
        path: "/offerings/{id}/purchases",
        summary: "Purchases of one of the issuer's offerings",
        request: { params: IdParam, query: PageQuery },
        responses: { 200: jsonResponse("A page of purchases", PurchaseListSchema), ...problemResponses },
      }),
      async (c) => {
        const { offering } = await mine(c, c.req.valid("param").id);
        const query = c.req.valid("query");
        return c.json(
          await pageOfPurchases(context.store, { offeringId: offering.id, cursor: query.cursor, limit: query.limit }),
          200,
        );
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/offerings/{id}/purchases.csv",
        summary: "Every purchase of one of the issuer's offerings, as CSV",
        request: { params: IdParam },
        responses: { 200: csvResponse("CSV, one purchase per row"), ...problemResponses },
      }),
      async (c) => {
        const { offering } = await mine(c, c.req.valid("param").id);
        const records = await loadPurchaseRecords(
          context.store,
          await listPurchases(context.store, { offeringId: offering.id, limit: 100_000 }),
        );
        const csv = toCsv(
          [
            "purchaseId",
            "status",
            "investor",
            "recipient",
            "units",
            "totalPriceUsdc",
            "amountPaidUsdc",
            "transactionHash",
            "createdAt",
            "amountRefundedUsdc",
            "refundStatus",
          ],
          records.map((record) => {
            const view = purchaseView(record);
            return [
              view.id,
              view.status,
              view.investor,
              view.recipient,
              view.units,
              view.totalPriceUsdc,
              view.settlement === null ? null : (view.payment?.amount ?? null),
              view.settlement?.transactionHash ?? null,
              view.createdAt,
              view.amountRefunded,
              view.refundStatus,
            ];
          }),
        );
        return c.body(csv, 200, csvHeaders(`${offering.id}-purchases.csv`));
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/offerings/{id}/holders",
        summary: "Holder register of one of the issuer's offerings (settled purchases per investor)",
        request: { params: IdParam },
        responses: { 200: jsonResponse("Holders", z.object({ data: z.array(HolderSchema) })), ...problemResponses },
      }),
      async (c) => {
        const { offering } = await mine(c, c.req.valid("param").id);
        return c.json({ data: await listHolders(context.store, offering.id) }, 200);
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/offerings/{id}/holders.csv",
        summary: "Holder register as CSV",
        request: { params: IdParam },
        responses: { 200: csvResponse("CSV, one holder per row"), ...problemResponses },
      }),
      async (c) => {
        const { offering } = await mine(c, c.req.valid("param").id);
        const holders = await listHolders(context.store, offering.id);
        const csv = toCsv(
          ["investor", "units", "totalPaidUsdc", "purchases", "kycStatus", "jurisdiction", "frozen"],
          holders.map((holder) => [
            holder.investor,
            holder.units,
            holder.totalPaidUsdc,
            holder.purchases,
            holder.kycStatus,
            holder.jurisdiction,
            holder.frozen,
          ]),
        );
        return c.body(csv, 200, csvHeaders(`${offering.id}-holders.csv`));
      },
    );
}

function csvHeaders(filename: string) {
  return { "Content-Type": "text/csv; charset=utf-8", "Content-Disposition": `attachment; filename="${filename}"` };
}
