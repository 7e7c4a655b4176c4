import { type createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppContext } from "../../app-context.js";
import { requestHash } from "../../checkout/idempotency.js";
import { issuerOfWallet } from "../../compliance/issuers.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { errorResponses } from "../../http/openapi-contract.js";
import { purchaseRefunds, refundPurchase } from "../../purchases/purchase-refunds.js";
import { REFUND_REASONS } from "../../refunds/refund-rules.js";
import { refundPageUrl, viewRefund } from "../../refunds/refunds.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { RefundSchema } from "../refunds.js";
import { jsonBody, jsonResponse, PageQuery } from "./schemas.js";

type IssuerEnv = AppEnv & { Variables: PortalVariables };

const PurchaseParam = z.object({ purchaseId: z.string().min(1).max(100) });

const RefundPurchaseBody = z
  .object({
    amount: z
      .string()
      .regex(/^[1-9][0-9]{0,29}$/, "a positive whole number of USDC base units, as a decimal string")
      .optional()
      .openapi({ description: "base units; default: all that remains refundable (a full refund returns the units)" }),
    reason: z.enum(REFUND_REASONS),
    note: z.string().max(500).optional(),
    idempotencyKey: z.string().min(1).max(200),
  })
  .strict();

const RefundListSchema = z.object({ data: z.array(RefundSchema), nextCursor: z.string().nullable() });

/**
 * The issuer's refunds of RWA purchases (SPEC 15, docs/refunds.md "Issuers"):
 * `POST /api/issuer/purchases/{purchaseId}/refunds` refunds a settled purchase of
 * one of the issuer's offerings to the investor's wallet, and `GET` lists that
 * purchase's refunds. Refunds belong to the issuer's partner, so everything after
 * creation (read, cancel, QR, test send, gasless send) is the partner's refund
 * routes, mounted for the issuer's session by `issuerRefundsAsPartner`.
 */
export function issuerPurchaseRefundRoutes(context: AppContext) {
  const issuerOf = (c: Context<IssuerEnv>) => issuerOfWallet(context.store, c.get("portalSession").address);
  const route = <config extends Parameters<typeof createRoute>[0]>(config: config) =>
    declareRoute({ ...config, tags: ["Issuer portal"], security: CALLERS.issuer });
  return new OpenAPIHono<IssuerEnv>()
    .openapi(
      route({
        method: "post",
        path: "/purchases/{purchaseId}/refunds",
        summary:
          "Refund a settled purchase of one of your offerings to the investor's wallet (in part, or in full: the units return to the offering)",
        request: { params: PurchaseParam, body: jsonBody(RefundPurchaseBody) },
        responses: {
          201: jsonResponse("The refund, `ready` to send from the offering's settlement address", RefundSchema),
          200: jsonResponse("The refund this idempotency key created", RefundSchema),
          ...errorResponses(
            "not_found",
            "forbidden",
            "purchase_not_paid",
            "refund_exceeds_remaining",
            "idempotency_conflict",
            "destination_is_payment_address",
          ),
        },
      }),
      async (c) => {
        const { purchaseId } = c.req.valid("param");
        const body = c.req.valid("json");
        const created = await refundPurchase(context, {
          issuer: await issuerOf(c),
          purchaseId,
          amount: body.amount === undefined ? undefined : BigInt(body.amount),
          reason: body.reason,
          note: body.note,
          idempotencyKey: body.idempotencyKey,
          // The key protects this request: the same key on another purchase is a conflict.
          requestHash: requestHash({ purchaseId, ...body }),
        });
        const baseUrl = context.settings.publicBaseUrl ?? new URL(c.req.url).origin;
        const customerUrl = created.token === null ? null : refundPageUrl(baseUrl, created.refund.id, created.token);
        return c.json(await viewRefund(context.store, created.refund, customerUrl), created.replayed ? 200 : 201);
      },
    )
    .openapi(
      route({
        method: "get",
        path: "/purchases/{purchaseId}/refunds",
        summary: "The refunds of a purchase of one of your offerings, newest first",
        request: { params: PurchaseParam, query: PageQuery },
        responses: { 200: jsonResponse("A page of refunds", RefundListSchema), ...errorResponses("not_found", "forbidden") },
      }),
      async (c) =>
        c.json(
          await purchaseRefunds(context, {
            issuer: await issuerOf(c),
            purchaseId: c.req.valid("param").purchaseId,
            ...c.req.valid("query"),
          }),
          200,
        ),
    );
}
