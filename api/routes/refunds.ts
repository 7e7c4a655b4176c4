import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress } from "viem";
import { csvResponseHeaders, wantsCsv } from "../accounting/csv-export.js";
import { refundsCsv } from "../accounting/reports.js";
import type { AppContext } from "../app-context.js";
import { requestHash } from "../checkout/idempotency.js";
import { AuthorizationBody, toSubmission } from "../gasless/authorization-schema.js";
import { paymentQrSvg } from "../hosted/payment-qr.js";
import { CALLERS, declaredFor, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import { refundAuthorizationRequest, relayRefundAuthorization } from "../refunds/refund-relay.js";
import { REFUND_REASONS, REFUND_STATUSES } from "../refunds/refund-rules.js";
import {
  cancelRefund,
  createRefund,
  listRefunds,
  PAYMENT_ID,
  partnerRefund,
  refundInstructions,
  refundPageUrl,
  viewRefund,
} from "../refunds/refunds.js";
import { refundNotReady, sendRefundWithTestAccount } from "../refunds/test-account-send.js";
import type { AppEnv } from "./app-env.js";

const address = z.string().refine((value): value is Address => isAddress(value, { strict: false }), "a 20-byte address in hex");
const amount = z.string().regex(/^[1-9][0-9]{0,29}$/, "a positive whole number of USDC base units, as a decimal string");

const InstructionsSchema = z
  .object({
    chainId: z.number().int(),
    tokenAddress: z.string(),
    from: z.string().openapi({ description: "the payment address that received the money: send the refund from it" }),
    to: z.string().openapi({ description: "the destination" }),
    amount: z.string(),
    uri: z.string().openapi({ description: "EIP-681 link of the transfer, for a wallet or a QR code" }),
    transaction: z.object({ to: z.string(), data: z.string(), chainId: z.number().int() }),
  })
  .openapi("RefundInstructions");

export const RefundSchema = z
  .object({
    id: z.string(),
    status: z.enum(REFUND_STATUSES),
    orderId: z.string().nullable(),
    externalOrderId: z.string().nullable(),
    paymentId: z.string().optional().openapi({
      description: "`<chainId>:<transactionHash>:<logIndex>` of the unresolved payment sent back (absent for an order's refund)",
    }),
    payment: z.object({ chainId: z.number().int(), transactionHash: z.string(), logIndex: z.number().int() }),
    amount: z.string(),
    reason: z.enum(REFUND_REASONS),
    note: z.string().nullable(),
    destination: z.string().nullable(),
    customerUrl: z.string().nullable().openapi({
      description:
        "`<PUBLIC_BASE_URL>/refund/<id>#rt=<token>`, for a refund awaiting its destination: send it to your customer. Shown when the refund is created (a replay of the creation shows a new link; the older one stops working); null elsewhere.",
    }),
    instructions: InstructionsSchema.nullable(),
    transactionHash: z.string().nullable(),
    createdAt: z.string(),
    readyAt: z.string().nullable(),
    succeededAt: z.string().nullable(),
    cancelledAt: z.string().nullable(),
  })
  .openapi("Refund");

const CreateRefundBody = z
  .object({
    orderId: z.string().min(1).max(100).optional(),
    payment: z
      .object({
        chainId: z.number().int().positive(),
        transactionHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "a 32-byte transaction hash in hex"),
        logIndex: z.number().int().nonnegative(),
      })
      .strict()
      .optional(),
    amount: amount.optional().openapi({ description: "base units; default: all that remains refundable" }),
    reason: z.enum(REFUND_REASONS),
    note: z.string().max(500).optional(),
    destination: z
      .union([z.literal("payer"), address])
      .optional()
      .openapi({
        description:
          "`payer` (the address the payment came from), an address you hold from your customer, or absent: the customer enters it on the refund page (`customerUrl`)",
      }),
    idempotencyKey: z.string().min(1).max(200),
  })
  .strict()
  .refine((body) => (body.orderId === undefined) !== (body.payment === undefined), {
    message: "name either orderId or payment, not both",
    path: ["orderId"],
  });

const RefundParam = z.object({ id: z.string().max(100) });

const createRoute_ = declareRoute({
  method: "post",
  path: "/",
  summary: "Refund a paid order (in part or in full) or an unresolved payment (SPEC 15; the service never moves money)",
  security: CALLERS.partnerChange,
  request: { body: { required: true, content: { "application/json": { schema: CreateRefundBody } } } },
  responses: {
    201: { description: "Created", content: { "application/json": { schema: RefundSchema } } },
    200: { description: "The refund this idempotency key created", content: { "application/json": { schema: RefundSchema } } },
    ...errorResponses(
      "not_found",
      "idempotency_conflict",
      "order_not_paid",
      "payment_not_refundable",
      "refund_exceeds_remaining",
      "destination_is_zero_address",
      "destination_is_token",
      "destination_is_payment_address",
      "destination_is_service_address",
    ),
  },
});

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "Your refunds, newest first",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      orderId: z.string().max(100).optional(),
      paymentId: z.string().regex(PAYMENT_ID).optional().openapi({
        description:
          "Refunds of one payment: `<chainId>:<transactionHash>:<logIndex>` (an unresolved one's, or an order's payment)",
      }),
      status: z.enum(REFUND_STATUSES).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: {
    200: {
      description: "A page of refunds (or, with `Accept: text/csv`, every refund the filters select as CSV)",
      content: {
        "application/json": { schema: z.object({ data: z.array(RefundSchema), nextCursor: z.string().nullable() }) },
        "text/csv": { schema: z.string().openapi({ description: "RFC 4180, columns in docs/accounting.md" }) },
      },
    },
  },
});

const readRoute = declareRoute({
  method: "get",
  path: "/{id}",
  summary: "One of your refunds",
  security: CALLERS.partnerRead,
  request: { params: RefundParam },
  responses: {
    200: { description: "The refund", content: { "application/json": { schema: RefundSchema } } },
    ...errorResponses("not_found"),
  },
});

const cancelRoute = declareRoute({
  method: "post",
  path: "/{id}/cancel",
  summary: "Cancel a refund no money moved for (`awaiting_destination` or `ready`); its amount is refundable again",
  security: CALLERS.partnerChange,
  request: { params: RefundParam },
  responses: {
    200: { description: "Cancelled (again: the same answer)", content: { "application/json": { schema: RefundSchema } } },
    ...errorResponses("not_found", "refund_not_cancellable"),
  },
});

const testSendRoute = declareRoute({
  method: "post",
  path: "/{id}/test-send",
  summary:
    "Local mode only: send a ready refund from its payment address with the test account (the index then completes it, as for any wallet)",
  security: CALLERS.partnerChange,
  request: { params: RefundParam },
  responses: {
    200: {
      description: "Sent and mined; the refund turns `pending`, then `succeeded`, once the index holds the transfer",
      content: { "application/json": { schema: z.object({ transactionHash: z.string(), refund: RefundSchema }) } },
    },
    ...errorResponses("not_found", "refund_not_ready", "refund_already_sent", "local_mode_only"),
  },
});

const qrRoute = declareRoute({
  method: "get",
  path: "/{id}/qr",
  summary: "A ready refund's EIP-681 link as an SVG QR code, for the payment address's wallet to scan",
  security: CALLERS.partnerRead,
  request: { params: RefundParam },
  responses: {
    200: { description: "SVG image", content: { "image/svg+xml": { schema: z.string() } } },
    ...errorResponses("not_found", "refund_not_ready"),
  },
});

const RELAY_REFUSALS = [
  "not_found",
  "refund_not_ready",
  "refund_already_relayed",
  "gasless_unavailable",
  "relay_amount_too_small",
  "relay_quota_exceeded",
  "relay_budget_spent",
] as const;

const authorizationRequestRoute = declareRoute({
  method: "get",
  path: "/{id}/authorization",
  summary: "What the payment address signs to send a ready refund without ETH (EIP-3009; the relayer submits it)",
  security: CALLERS.partnerRead,
  request: { params: RefundParam },
  responses: {
    200: {
      description: "The token's EIP-712 domain and a TransferWithAuthorization of the refund (fresh nonce, one hour of validity)",
      content: {
        "application/json": {
          schema: z.object({
            refundId: z.string(),
            relayer: z.string(),
            domain: z.object({ name: z.string(), version: z.string(), chainId: z.number().int(), verifyingContract: z.string() }),
            types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
            primaryType: z.literal("TransferWithAuthorization"),
            message: z.object({
              from: z.string(),
              to: z.string(),
              value: z.string(),
              validAfter: z.string(),
              validBefore: z.string(),
              nonce: z.string(),
            }),
          }),
        },
      },
    },
    ...errorResponses(...RELAY_REFUSALS),
  },
});

const relayRoute = declareRoute({
  method: "post",
  path: "/{id}/authorization",
  summary:
    "Send a ready refund without ETH: the payment address's signed EIP-3009 authorization, submitted by the relayer; the refund completes when the index shows the transfer",
  security: CALLERS.partnerChange,
  request: { params: RefundParam, body: { required: true, content: { "application/json": { schema: AuthorizationBody } } } },
  responses: {
    200: {
      description: "Sent by the relayer; the refund stays `ready` until the index shows the transfer",
      content: {
        "application/json": { schema: z.object({ transactionHash: z.string(), relayer: z.string(), refund: RefundSchema }) },
      },
    },
    ...errorResponses(
      ...RELAY_REFUSALS,
      "authorization_wrong_network",
      "authorization_wrong_token",
      "authorization_wrong_payer",
      "authorization_wrong_recipient",
      "authorization_wrong_amount",
      "authorization_not_yet_valid",
      "authorization_expired",
      "authorization_bad_signature",
      "authorization_used",
      "authorization_insufficient_balance",
      "authorization_rejected_on_chain",
      "relayer_out_of_funds",
      "relay_failed",
    ),
  },
});

/**
 * The partner's refunds (`/v1/refunds`, and `/api/partner/refunds` for the console), or the
 * same routes for an issuer acting as its own partner (`/api/issuer/refunds`, docs/refunds.md
 * "Issuers"), each route then declared for the issuer's session alone.
 */
export function refundRoutes(context: AppContext, audience: "partner" | "issuer" = "partner") {
  const declared = <route extends { security?: unknown; middleware?: unknown }>(route: route) =>
    audience === "partner" ? route : declaredFor(route, CALLERS.issuerAsPartner);
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(declared(createRoute_), async (c) => {
      const body = c.req.valid("json");
      const created = await createRefund(context, {
        partnerId: c.get("partner").id,
        orderId: body.orderId,
        payment:
          body.payment === undefined ? undefined : { ...body.payment, transactionHash: body.payment.transactionHash as Hex },
        amount: body.amount === undefined ? undefined : BigInt(body.amount),
        reason: body.reason,
        note: body.note,
        destination: body.destination,
        idempotencyKey: body.idempotencyKey,
        requestHash: requestHash(body),
      });
      const baseUrl = context.settings.publicBaseUrl ?? new URL(c.req.url).origin;
      const customerUrl = created.token === null ? null : refundPageUrl(baseUrl, created.refund.id, created.token);
      return c.json(await viewRefund(context.store, created.refund, customerUrl), created.replayed ? 200 : 201);
    })
    .openapi(declared(listRoute), async (c) => {
      const { cursor, limit, ...filters } = c.req.valid("query");
      const partnerId = c.get("partner").id;
      if (wantsCsv(c.req.header("Accept")))
        return c.body(refundsCsv(context, { ...filters, partnerId }), 200, csvResponseHeaders("refunds"));
      return c.json(await listRefunds(context.store, { ...filters, cursor, limit, partnerId }), 200);
    })
    .openapi(declared(readRoute), async (c) => {
      const refund = await partnerRefund(context.store, { partnerId: c.get("partner").id, refundId: c.req.valid("param").id });
      return c.json(await viewRefund(context.store, refund), 200);
    })
    .openapi(declared(cancelRoute), async (c) => {
      const refund = await cancelRefund(context, { partnerId: c.get("partner").id, refundId: c.req.valid("param").id });
      return c.json(await viewRefund(context.store, refund), 200);
    })
    .openapi(declared(testSendRoute), async (c) =>
      c.json(
        await sendRefundWithTestAccount(context, { partnerId: c.get("partner").id, refundId: c.req.valid("param").id }),
        200,
      ),
    )
    .openapi(declared(authorizationRequestRoute), async (c) =>
      c.json(
        await refundAuthorizationRequest(context, { partnerId: c.get("partner").id, refundId: c.req.valid("param").id }),
        200,
      ),
    )
    .openapi(declared(relayRoute), async (c) =>
      c.json(
        await relayRefundAuthorization(context, {
          partnerId: c.get("partner").id,
          refundId: c.req.valid("param").id,
          submission: toSubmission(c.req.valid("json")),
        }),
        200,
      ),
    )
    .openapi(declared(qrRoute), async (c) => {
      const refund = await partnerRefund(context.store, { partnerId: c.get("partner").id, refundId: c.req.valid("param").id });
      const instructions = refundInstructions(refund);
      if (refund.status !== "ready" || instructions === null) throw refundNotReady(refund.status);
      return c.body(await paymentQrSvg(instructions.uri), 200, {
        "Content-Type": "image/svg+xml; charset=utf-8",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
      });
    });
}
