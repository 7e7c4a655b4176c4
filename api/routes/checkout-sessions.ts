import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { createCheckoutSession } from "../checkout/create-session.js";
import {
  CustomerPrefillSchema,
  checkHostedOptions,
  HostedOptionsFields,
  hostedCheckoutUrl,
  LineItemSchema,
  presentationView,
  readPresentation,
} from "../checkout/hosted-options.js";
import { SESSION_STATUSES } from "../checkout/list-sessions.js";
import { findPartnerSession } from "../checkout/session-record.js";
import { sessionView } from "../checkout/session-view.js";
import { NETWORK_NAMES } from "../config/networks.js";
import { GaslessViewSchema } from "../gasless/authorization-schema.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problems } from "../http/problem.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import { sendTestPayment, testPaymentsEnabled } from "../settlement/test-payment.js";
import { partnerSessionView } from "../views/partner-session-view.js";
import { listSessionsWithOrderSummaries } from "../views/session-list.js";
import type { AppEnv } from "./app-env.js";

const baseUnits = z
  .string()
  .regex(/^[1-9]\d{0,17}$/, 'a positive integer of USDC base units (6 decimals) written as a string, e.g. "25000000" for 25 USDC')
  .openapi({ example: "25000000" });

/** docs/quick-start.md, with the choices docs/quick-start.md fixes. */
export const CreateSessionBody = z
  .object({
    externalOrderId: z.string().min(1).max(200),
    externalProductId: z.string().min(1).max(200),
    productName: z.string().min(1).max(200),
    productCategory: z.string().max(100).default(""),
    quantity: z.number().int().min(1).max(1_000_000),
    totalPriceUsdc: baseUnits,
    shippingRequired: z.boolean().default(false),
    paymentMethod: z.literal("usdc"),
    checkoutMode: z.literal("hosted_transfer"),
    certificate: z.object({ enabled: z.boolean() }).strict().default({ enabled: false }),
    idempotencyKey: z.string().min(1).max(255),
    network: z.enum(NETWORK_NAMES).optional(),
    expiresInSeconds: z.number().int().min(300).max(86_400).default(1_800),
    ...HostedOptionsFields,
  })
  .strict()
  .openapi("CreateCheckoutSession");

export const PaymentSchema = z.object({
  token: z.literal("USDC"),
  tokenAddress: z.string(),
  recipient: z.string(),
  amount: z.string().openapi({ description: "exact amount to send: totalPriceUsdc plus the sub-cent payment reference" }),
  totalPriceUsdc: z.string(),
  decimals: z.literal(6),
  uri: z.string().openapi({ description: "EIP-681 payment link" }),
});

export const SessionSchema = z
  .object({
    id: z.string(),
    status: z.enum(SESSION_STATUSES),
    expiresAt: z.string(),
    network: z.string(),
    chainId: z.number().int(),
    externalOrderId: z.string(),
    orderId: z.string(),
    purchaseId: z.string(),
    product: z.object({
      externalProductId: z.string(),
      name: z.string(),
      category: z.string(),
      quantity: z.number().int(),
    }),
    shippingRequired: z.boolean(),
    certificate: z.object({ enabled: z.boolean() }),
    payment: PaymentSchema,
    createdAt: z.string(),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    customer: CustomerPrefillSchema.nullable().openapi({ description: "the prefill given at creation" }),
    lineItems: z.array(LineItemSchema).nullable(),
  })
  .openapi("CheckoutSession");

const SessionListItemSchema = SessionSchema.partial({
  successUrl: true,
  cancelUrl: true,
  metadata: true,
  customer: true,
  lineItems: true,
}).extend({
  kind: z.string().openapi({ description: "`commerce` or `rwa` (an issuer's purchase)" }),
  order: z.object({
    id: z.string(),
    status: z.string(),
    fulfilledAt: z.string().nullable(),
    amountPaid: z.string().nullable(),
    underpaid: z.boolean().openapi({ description: "Settled by an attached transfer below the total" }),
    amountRefunded: z.string().openapi({ description: "Refunded so far (base units), as on `GET /v1/orders/:id`" }),
    amountRefundPending: z.string().openapi({ description: "Refunds created and not yet succeeded or cancelled" }),
    refundStatus: z.enum(["none", "partial", "full"]),
    rewardCount: z.number().int().openapi({ description: "Rewards granted on the order and not revoked or expired" }),
    amountRewarded: z.string().openapi({ description: "Their sum (base units)" }),
  }),
});

const CreatedSchema = SessionSchema.extend({
  clientToken: z.string(),
  url: z.string().openapi({
    description:
      "the hosted checkout: `<PUBLIC_BASE_URL>/checkout/<id>#ct=<clientToken>` (the token in the fragment, never sent to a server)",
  }),
});

/** What a local-mode test payment sent, and the answer its hash submission got (a problem when it does not pay). */
export const TestPaymentResultSchema = z
  .object({
    transactionHash: z.string(),
    from: z.string(),
    amount: z.string(),
    submission: z
      .union([
        z.object({
          status: z.enum(["settled", "payment_pending"]),
          transactionHash: z.string(),
          confirmations: z.number().int(),
          requiredConfirmations: z.number().int(),
        }),
        z.object({ problem: z.object({ code: z.string(), detail: z.string() }) }),
      ])
      .nullable(),
  })
  .openapi("TestPaymentResult");

const createRoute_ = declareRoute({
  method: "post",
  path: "/",
  summary: "Create a checkout session",
  security: CALLERS.partnerChange,
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: CreateSessionBody,
          example: {
            externalOrderId: "order-1042",
            externalProductId: "sku-mug-blue",
            productName: "Blue mug",
            quantity: 1,
            totalPriceUsdc: "25000000",
            paymentMethod: "usdc",
            checkoutMode: "hosted_transfer",
            idempotencyKey: "order-1042-attempt-1",
            successUrl: "https://shop.example/thanks?session={CHECKOUT_SESSION_ID}",
            cancelUrl: "https://shop.example/cart",
            metadata: { cartId: "c-778" },
          },
        },
      },
    },
  },
  responses: {
    ...errorResponses(
      "idempotency_conflict",
      "payment_in_progress",
      "order_not_commerce",
      "unsupported_network",
      "no_payment_address",
      "reference_space_exhausted",
    ),
    201: {
      description: "Created",
      content: { "application/json": { schema: CreatedSchema } },
    },
    200: {
      description: "Replay of an earlier request, or the settled session of an already paid order",
      content: { "application/json": { schema: CreatedSchema } },
    },
  },
});

const readRoute = declareRoute({
  method: "get",
  path: "/{id}",
  summary: "Read a checkout session",
  security: CALLERS.partnerRead,
  request: { params: z.object({ id: z.string().max(100) }) },
  responses: {
    200: {
      description: "The session, with what a page needs to offer paying without gas",
      content: { "application/json": { schema: SessionSchema.extend({ gasless: GaslessViewSchema }) } },
    },
    ...errorResponses("not_found"),
  },
});

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "List checkout sessions, newest first, each with its order's status",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      status: z.enum(SESSION_STATUSES).optional(),
      cursor: z.string().max(500).optional(),
      limit: z.coerce.number().int().min(1).max(100).default(20),
    }),
  },
  responses: {
    200: {
      description: "A page of sessions",
      content: {
        "application/json": {
          // The list leaves out the hosted-page options (redirects, metadata, prefill, line items): read one session for them.
          schema: z.object({ data: z.array(SessionListItemSchema), nextCursor: z.string().nullable() }),
        },
      },
    },
  },
});

const testPaymentRoute = declareRoute({
  method: "post",
  path: "/{id}/test-payment",
  summary: "Local mode only: pay one of your sessions from a funded Anvil account (`npm run pay`); 404 elsewhere",
  security: CALLERS.partnerChange,
  request: {
    params: z.object({ id: z.string().max(100) }),
    body: {
      required: false,
      content: {
        "application/json": {
          schema: z
            .object({
              amount: baseUnits.optional(),
              submit: z.boolean().default(true),
            })
            .strict(),
        },
      },
    },
  },
  responses: {
    200: {
      description: "The transfer sent and its submission's answer",
      content: { "application/json": { schema: TestPaymentResultSchema } },
    },
    ...errorResponses("not_found", "session_not_open", "test_payment_refused"),
  },
});

export function checkoutSessionRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(listRoute, async (c) =>
      c.json(
        await listSessionsWithOrderSummaries(context.store, { ...c.req.valid("query"), partnerId: c.get("partner").id }),
        200,
      ),
    )
    .openapi(createRoute_, async (c) => {
      const body = c.req.valid("json");
      const partner = c.get("partner");
      const totalPriceUsdc = BigInt(body.totalPriceUsdc);
      checkHostedOptions(context.settings, body, totalPriceUsdc);
      const created = await createCheckoutSession(context, {
        partnerId: partner.id,
        kind: "commerce",
        network: body.network,
        externalOrderId: body.externalOrderId,
        externalProductId: body.externalProductId,
        productName: body.productName,
        productCategory: body.productCategory,
        quantity: body.quantity,
        totalPriceUsdc,
        shippingRequired: body.shippingRequired,
        certificateEnabled: body.certificate.enabled,
        expiresInSeconds: body.expiresInSeconds,
        metadata: body.metadata,
        presentation: {
          successUrl: body.successUrl,
          cancelUrl: body.cancelUrl,
          customer: body.customer,
          lineItems: body.lineItems,
        },
        idempotencyKey: body.idempotencyKey,
        requestBody: body,
      });
      const session = created.session;
      const presentation = await readPresentation(context.store, session.id);
      const baseUrl = context.settings.publicBaseUrl ?? new URL(c.req.url).origin;
      const view = {
        ...sessionView(session, created),
        ...presentationView(session.id, presentation, session.metadata),
        clientToken: created.clientToken,
        url: hostedCheckoutUrl(baseUrl, session.id, created.clientToken),
      };
      const isNew = !created.replayed && session.status === "awaiting_payment" && session.createdAt >= Date.now() - 60_000;
      return isNew ? c.json(view, 201) : c.json(view, 200);
    })
    .openapi(testPaymentRoute, async (c) => {
      if (!(await testPaymentsEnabled(context))) throw problems.notFound("Test payments");
      const { id } = c.req.valid("param");
      const body = c.req.valid("json") ?? { submit: true };
      const session = await findPartnerSession(context.store, { partnerId: c.get("partner").id, sessionId: id });
      if (session === undefined) throw problems.notFound(`Checkout session ${id}`);
      const result = await sendTestPayment(context, {
        session,
        amount: body.amount === undefined ? undefined : BigInt(body.amount),
        submit: body.submit ?? true,
      });
      return c.json(result, 200);
    })
    .openapi(readRoute, async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await partnerSessionView(context, { partnerId: c.get("partner").id, sessionId: id }), 200);
    });
}
