import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppContext } from "../../app-context.js";
import { decodeCursor, encodeCursor, splitPage } from "../../http/cursor.js";
import { problems } from "../../http/problem.js";
import { DELIVERY_STATUSES, listDeliveries } from "../../outbox/deliveries.js";
import type { AppEnv } from "../../routes/app-env.js";
import { listAudit, type PortalActor } from "../audit-log.js";
import {
  eligibilityView,
  findEligibility,
  KYC_STATUSES,
  listEligibility,
  setEligibility,
  setWalletFrozen,
} from "../eligibility.js";
import { disableIssuer, issuerView, listIssuers, registerIssuer } from "../issuers.js";
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
} from "../offerings.js";
import {
  addPartnerPaymentAddress,
  createPartnerKey,
  createPartnerWithKey,
  listPartnerIds,
  partnerDetails,
  revokePartnerKey,
} from "../partner-admin.js";
import { type PortalVariables, requirePortalSession } from "../portal-auth.js";
import {
  AddressSchema,
  EligibilitySchema,
  IdParam,
  IsoInstantSchema,
  IssuerSchema,
  JurisdictionSchema,
  jsonBody,
  jsonResponse,
  OfferingListSchema,
  OfferingSchema,
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
const PaymentAddressSchema = z.object({
  id: z.string(),
  network: z.string(),
  chainId: z.number().int(),
  address: z.string(),
  watching: z.boolean().openapi({ description: "False until the indexer has restarted with this address" }),
});
const PartnerSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    issuerId: z.string().nullable(),
    createdAt: z.string(),
    apiKeys: z.array(z.object({ id: z.string(), prefix: z.string(), createdAt: z.string(), revokedAt: z.string().nullable() })),
    paymentAddresses: z.array(PaymentAddressSchema),
  })
  .openapi("Partner");
const NewKeySchema = z.object({
  id: z.string(),
  apiKey: z.string().openapi({ description: "Shown only in this answer; store it in the partner's server" }),
});
const AuditEntrySchema = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    actor: z.object({ role: z.enum(["investor", "issuer", "admin", "partner", "operator"]), address: z.string() }),
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string() }),
    details: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .openapi("AuditEntry");
const DeliverySchema = z.object({
  id: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  partnerId: z.string(),
  endpointId: z.string(),
  url: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attemptCount: z.number().int(),
  nextAttemptAt: z.string().nullable(),
  lastAttemptAt: z.string().nullable(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  createdAt: z.string(),
});

type AdminEnv = AppEnv & { Variables: PortalVariables };

/** `/api/admin`: compliance and operations. Every change is written to the audit log with the change. */
export function adminRoutes(context: AppContext) {
  const adminOnly = requirePortalSession(context, "admin");
  const security = [{ portalSession: [] }];
  const tags = ["Admin portal"];
  const actorOf = (c: Context<AdminEnv>): PortalActor => ({ role: "admin", address: c.get("portalSession").address });
  const keyMode = context.settings.localMode ? ("test" as const) : ("live" as const);
  const route = <config extends Parameters<typeof createRoute>[0]>(config: config) =>
    createRoute({ ...config, tags, security, middleware: [adminOnly] as const });
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

  return (
    new OpenAPIHono<AdminEnv>()
      // Issuers
      .openapi(
        route({
          method: "post",
          path: "/issuers",
          summary: "Register an issuer wallet (creates the issuer's partner)",
          request: { body: jsonBody(z.object({ address: AddressSchema, name: z.string().min(1).max(200) })) },
          responses: { 201: jsonResponse("The issuer", IssuerSchema), ...problemResponses },
        }),
        async (c) => c.json(issuerView(await registerIssuer(context.store, actorOf(c), c.req.valid("json"))), 201),
      )
      .openapi(
        route({
          method: "get",
          path: "/issuers",
          summary: "Every issuer",
          responses: { 200: jsonResponse("Issuers", z.object({ data: z.array(IssuerSchema) })), ...problemResponses },
        }),
        async (c) => c.json({ data: (await listIssuers(context.store)).map(issuerView) }, 200),
      )
      .openapi(
        route({
          method: "post",
          path: "/issuers/{id}/disable",
          summary: "Disable an issuer: its wallet can no longer sign in",
          request: { params: IdParam },
          responses: { 200: jsonResponse("The issuer", IssuerSchema), ...problemResponses },
        }),
        async (c) => c.json(issuerView(await disableIssuer(context.store, actorOf(c), c.req.valid("param").id)), 200),
      )
      // Investor eligibility
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
          const rows = await listEligibility(context.store, {
            afterAddress: query.cursor === undefined ? undefined : decodeCursor(query.cursor, z.object({ a: z.string() })).a,
            limit: query.limit + 1,
            kycStatus: query.kycStatus,
            frozen: query.frozen === undefined ? undefined : query.frozen === "true",
          });
          const { page, last } = splitPage(rows, query.limit);
          return c.json(
            {
              data: page.map((row) => eligibilityView(row.address, row)),
              nextCursor: last === undefined ? null : encodeCursor({ a: last.address }),
            },
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
      )
      // Offerings
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
      )
      // Partners, API keys and payment addresses
      .openapi(
        route({
          method: "post",
          path: "/partners",
          summary: "Create a commerce partner and its first API key (shown once)",
          request: { body: jsonBody(z.object({ name: z.string().min(1).max(200) })) },
          responses: {
            201: jsonResponse("The partner and its key", z.object({ partner: PartnerSchema, apiKey: NewKeySchema })),
            ...problemResponses,
          },
        }),
        async (c) => {
          const { partner, key } = await createPartnerWithKey(context.store, actorOf(c), {
            name: c.req.valid("json").name,
            mode: keyMode,
          });
          return c.json(
            {
              partner: await partnerDetails(context.store, partner.id, context.settings.indexSchema),
              apiKey: { id: key.id, apiKey: key.apiKey },
            },
            201,
          );
        },
      )
      .openapi(
        route({
          method: "get",
          path: "/partners",
          summary: "Partners with key prefixes and payment addresses",
          request: { query: PageQuery },
          responses: {
            200: jsonResponse(
              "A page of partners",
              z.object({ data: z.array(PartnerSchema), nextCursor: z.string().nullable() }),
            ),
            ...problemResponses,
          },
        }),
        async (c) => {
          const query = c.req.valid("query");
          const ids = await listPartnerIds(context.store, {
            after: query.cursor === undefined ? undefined : decodeCursor(query.cursor, z.object({ id: z.string() })).id,
            limit: query.limit + 1,
          });
          const { page, last } = splitPage(ids, query.limit);
          return c.json(
            {
              data: await Promise.all(page.map((id) => partnerDetails(context.store, id, context.settings.indexSchema))),
              nextCursor: last === undefined ? null : encodeCursor({ id: last }),
            },
            200,
          );
        },
      )
      .openapi(
        route({
          method: "get",
          path: "/partners/{id}",
          summary: "One partner",
          request: { params: IdParam },
          responses: { 200: jsonResponse("The partner", PartnerSchema), ...problemResponses },
        }),
        async (c) => c.json(await partnerDetails(context.store, c.req.valid("param").id, context.settings.indexSchema), 200),
      )
      .openapi(
        route({
          method: "post",
          path: "/partners/{id}/api-keys",
          summary: "Issue another API key (shown once)",
          request: { params: IdParam },
          responses: { 201: jsonResponse("The key", NewKeySchema), ...problemResponses },
        }),
        async (c) => {
          const key = await createPartnerKey(context.store, actorOf(c), { partnerId: c.req.valid("param").id, mode: keyMode });
          return c.json({ id: key.id, apiKey: key.apiKey }, 201);
        },
      )
      .openapi(
        route({
          method: "delete",
          path: "/partners/{id}/api-keys/{keyId}",
          summary: "Revoke an API key",
          request: { params: z.object({ id: z.string().min(1).max(100), keyId: z.string().min(1).max(100) }) },
          responses: { 204: { description: "Revoked" }, ...problemResponses },
        }),
        async (c) => {
          const { id, keyId } = c.req.valid("param");
          await revokePartnerKey(context.store, actorOf(c), { partnerId: id, keyId });
          return c.body(null, 204);
        },
      )
      .openapi(
        route({
          method: "post",
          path: "/partners/{id}/payment-addresses",
          summary: "Give a partner a payment address (watched once the indexer restarts with it)",
          request: { params: IdParam, body: jsonBody(z.object({ network: z.string().min(1).max(40), address: AddressSchema })) },
          responses: { 201: jsonResponse("The payment address", PaymentAddressSchema), ...problemResponses },
        }),
        async (c) => {
          const body = c.req.valid("json");
          const added = await addPartnerPaymentAddress(context, actorOf(c), { partnerId: c.req.valid("param").id, ...body });
          return c.json(added, 201);
        },
      )
      // Event deliveries and the audit log
      .openapi(
        route({
          method: "get",
          path: "/event-deliveries",
          summary: "Webhook deliveries of every partner, newest first",
          request: {
            query: PageQuery.extend({ partnerId: z.string().max(100).optional(), status: z.enum(DELIVERY_STATUSES).optional() }),
          },
          responses: {
            200: jsonResponse(
              "A page of deliveries",
              z.object({ data: z.array(DeliverySchema), nextCursor: z.string().nullable() }),
            ),
            ...problemResponses,
          },
        }),
        async (c) => {
          const query = c.req.valid("query");
          return c.json(await listDeliveries(context.store, query), 200);
        },
      )
      .openapi(
        route({
          method: "get",
          path: "/audit-log",
          summary: "Every admin and issuer action, newest first (append-only)",
          request: {
            query: PageQuery.extend({
              action: z.string().max(100).optional(),
              actor: AddressSchema.optional(),
              targetId: z.string().max(100).optional(),
            }),
          },
          responses: {
            200: jsonResponse(
              "A page of entries",
              z.object({ data: z.array(AuditEntrySchema), nextCursor: z.string().nullable() }),
            ),
            ...problemResponses,
          },
        }),
        async (c) => {
          const query = c.req.valid("query");
          const rows = await listAudit(context.store, {
            beforeSeq: query.cursor === undefined ? undefined : decodeCursor(query.cursor, z.object({ s: z.number().int() })).s,
            limit: query.limit + 1,
            action: query.action,
            actor: query.actor,
            targetId: query.targetId,
          });
          const { page, last } = splitPage(rows, query.limit);
          return c.json(
            {
              data: page.map((entry) => ({ ...entry, actor: { ...entry.actor } })),
              nextCursor: last === undefined ? null : encodeCursor({ s: last.seq }),
            },
            200,
          );
        },
      )
  );
}
