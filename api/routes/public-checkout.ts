import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress, isHash } from "viem";
import type { AppContext } from "../app-context.js";
import { claimCertificate } from "../certificates/claim-certificate.js";
import { authenticateClientToken, authenticateClientTokenWithSurroundings } from "../checkout/client-tokens.js";
import { CustomerPrefillSchema, LineItemSchema } from "../checkout/hosted-options.js";
import { SESSION_STATUSES } from "../checkout/list-sessions.js";
import { readSessionWithSurroundings, recordCustomerDetails } from "../checkout/public-session.js";
import { GaslessViewSchema } from "../gasless/authorization-schema.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problems } from "../http/problem.js";
import { submitTransactionHash } from "../settlement/submit-transaction-hash.js";
import { sendTestPayment, testPaymentsEnabled } from "../settlement/test-payment.js";
import { checksum } from "../values/checksum-address.js";
import { publicSessionView } from "../views/public-session-view.js";
import type { AppEnv } from "./app-env.js";
import { PaymentSchema, TestPaymentResultSchema } from "./checkout-sessions.js";

const clientToken = z.string().min(1).max(200);
const SessionParam = z.object({ id: z.string().max(100) });

export const ContactSchema = z
  .object({
    email: z.string().email().max(254),
    name: z.string().min(1).max(200).optional(),
    phone: z.string().max(40).optional(),
  })
  .strict();
export const DeliverySchema = z
  .object({
    name: z.string().min(1).max(200),
    line1: z.string().min(1).max(200),
    line2: z.string().max(200).optional(),
    city: z.string().min(1).max(100),
    postalCode: z.string().min(1).max(20),
    region: z.string().max(100).optional(),
    country: z.string().regex(/^[A-Z]{2}$/, "an ISO 3166-1 alpha-2 country code"),
  })
  .strict();

const json = <schema extends z.ZodType>(schema: schema) => ({ required: true, content: { "application/json": { schema } } });
const ok = <schema extends z.ZodType>(description: string, schema: schema) => ({
  200: { description, content: { "application/json": { schema } } },
});

/** The session as the customer's browser may see it: no partner metadata, no client token. */
const PublicSessionSchema = z
  .object({
    id: z.string(),
    status: z.enum(SESSION_STATUSES),
    expiresAt: z.string(),
    network: z.string(),
    chainId: z.number().int(),
    orderId: z.string(),
    payment: PaymentSchema.openapi({ description: "token, recipient, exact amount and EIP-681 link" }),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    customer: CustomerPrefillSchema.nullable(),
    lineItems: z.array(LineItemSchema).nullable(),
    merchant: z
      .object({
        displayName: z.string(),
        logoUrl: z.string().nullable(),
        accentColor: z.string().nullable(),
        supportUrl: z.string().nullable(),
        supportEmail: z.string().nullable(),
      })
      .openapi({ description: "the partner's display name, logo and support links" }),
    confirmations: z.number().int().nullable(),
    requiredConfirmations: z.number().int().nullable(),
    unresolvedPayment: z
      .object({
        transactionHash: z.string(),
        amount: z.string(),
        expectedAmount: z.string(),
        reason: z.string().nullable(),
        status: z.string(),
      })
      .nullable(),
    testPayments: z.boolean(),
    transactionHash: z.string().nullable(),
    contactProvided: z.boolean(),
    deliveryProvided: z.boolean(),
    certificate: z.object({ enabled: z.boolean(), status: z.string(), mintTransactionHash: z.string().nullable() }),
    rewards: z
      .array(z.record(z.string(), z.unknown()))
      .openapi({ description: "The order's rewards (docs/rewards.md), claimed with POST /v1/public/rewards/{rewardId}/claim" }),
    externalOrderId: z.string(),
    purchaseId: z.string(),
    product: z.object({ externalProductId: z.string(), name: z.string(), category: z.string(), quantity: z.number().int() }),
    shippingRequired: z.boolean(),
    createdAt: z.string(),
    gasless: GaslessViewSchema,
  })
  .openapi("PublicCheckoutSession");

const CertificateClaimSchema = z
  .object({
    voucher: z.object({ buyer: z.string(), purchaseId: z.string(), tokenURI: z.string(), deadline: z.string() }),
    signature: z.string(),
    contract: z.object({ address: z.string(), chainId: z.number().int() }),
    transaction: z.object({ to: z.string(), data: z.string(), chainId: z.number().int() }),
  })
  .openapi("CheckoutCertificateClaim");

/** Every browser call proves the client token of one session. */
const tokenProblems = ["invalid_client_token", "not_found", "session_expired"] as const;

const validateRoute = declareRoute({
  method: "post",
  path: "/sessions/{id}/validate",
  security: CALLERS.anyone,
  summary: "Validate a session for the hosted checkout (browser)",
  request: {
    params: SessionParam,
    body: json(
      z.object({
        clientToken,
        payer: z
          .string()
          .refine((value): value is Address => isAddress(value, { strict: false }), "an address")
          .optional()
          .openapi({
            description:
              "The customer's connected wallet: the answer's `gasless.typedData` is then what that wallet signs to pay without gas",
          }),
      }),
    ),
  },
  responses: { ...ok("The session as the customer may see it", PublicSessionSchema), ...errorResponses(...tokenProblems) },
});
const detailsRoute = declareRoute({
  method: "post",
  path: "/sessions/{id}/details",
  security: CALLERS.anyone,
  summary: "Contact and delivery details (browser)",
  request: {
    params: SessionParam,
    body: json(z.object({ clientToken, contact: ContactSchema, delivery: DeliverySchema.optional() })),
  },
  responses: {
    ...ok("Saved; the session as the customer may now see it", PublicSessionSchema),
    ...errorResponses(...tokenProblems, "session_not_open"),
  },
});
const paymentsRoute = declareRoute({
  method: "post",
  path: "/payments",
  security: CALLERS.anyone,
  summary: "Submit the transaction hash of the payment (browser)",
  request: {
    body: json(
      z.object({
        clientToken,
        transactionHash: z.string().refine((value): value is Hex => isHash(value), "a 32-byte transaction hash in hex"),
      }),
    ),
  },
  responses: {
    ...ok(
      "Settled or pending; a transaction that does not pay the session is a problem with its reason",
      z.object({
        status: z.enum(["settled", "payment_pending"]),
        transactionHash: z.string(),
        confirmations: z.number().int(),
        requiredConfirmations: z.number().int(),
        session: PublicSessionSchema,
      }),
    ),
    ...errorResponses(
      ...tokenProblems,
      "payment_not_found",
      "wrong_amount",
      "late",
      "predates_session",
      "wrong_token",
      "wrong_recipient",
      "wrong_network",
      "wrong_payer",
      "reverted",
      "replay",
      "duplicate_payment",
      "rate_limited",
    ),
  },
});
const claimRoute = declareRoute({
  method: "post",
  path: "/sessions/{id}/claim",
  security: CALLERS.anyone,
  summary: "Claim the certificate of a settled purchase (browser)",
  request: {
    params: SessionParam,
    body: json(
      z.object({
        clientToken,
        walletAddress: z.string().refine((value): value is Address => isAddress(value, { strict: false }), "an address"),
      }),
    ),
  },
  responses: {
    ...ok("Signed voucher and the ready-to-send mint transaction", CertificateClaimSchema),
    ...errorResponses(
      ...tokenProblems,
      "certificate_not_available",
      "certificate_revoked",
      "voucher_key_missing",
      "recipient_not_eligible",
      "wallet_frozen",
    ),
  },
});

const testPaymentRoute = declareRoute({
  method: "post",
  path: "/sessions/{id}/test-payment",
  security: CALLERS.anyone,
  summary: "Local mode only: the service pays the session from a funded Anvil account (404 elsewhere)",
  request: {
    params: SessionParam,
    body: json(
      z.object({
        clientToken,
        amount: z
          .string()
          .regex(/^[1-9]\d{0,17}$/)
          .optional(),
      }),
    ),
  },
  responses: {
    ...ok("The transfer sent and the answer of its submission", TestPaymentResultSchema.extend({ session: PublicSessionSchema })),
    ...errorResponses(...tokenProblems, "session_not_open", "test_payment_refused"),
  },
});

/** Browser operations of the hosted checkout and claim page: the client token rides in the JSON body. */
export function publicCheckoutRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>()
    .openapi(validateRoute, async (c) => {
      const { id } = c.req.valid("param");
      // The customer's status poll: the token's admission and every row of the view in one query.
      const body = c.req.valid("json");
      const surroundings = await authenticateClientTokenWithSurroundings(context.store, {
        sessionId: id,
        clientToken: body.clientToken,
        use: "read",
      });
      const payer = body.payer === undefined ? undefined : checksum(body.payer);
      return c.json(await publicSessionView(context, surroundings, { payer }), 200);
    })
    .openapi(detailsRoute, async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const session = await authenticateClientToken(context.store, {
        sessionId: id,
        clientToken: body.clientToken,
        use: "write",
      });
      await recordCustomerDetails(context.store, session, { contact: body.contact, delivery: body.delivery });
      return c.json(await publicSessionView(context, await readSessionWithSurroundings(context.store, session.id)), 200);
    })
    .openapi(paymentsRoute, async (c) => {
      const body = c.req.valid("json");
      const surroundings = await authenticateClientTokenWithSurroundings(context.store, {
        clientToken: body.clientToken,
        use: "read",
      });
      const { session } = surroundings;
      const result = await submitTransactionHash(context, { session, transactionHash: body.transactionHash });
      // Recording the payment moves the session to the answer's status (payment_pending
      // or settled); re-read it only when it was not there already.
      const current =
        result.status !== session.status ? await readSessionWithSurroundings(context.store, session.id) : surroundings;
      return c.json({ ...result, session: await publicSessionView(context, current) }, 200);
    })
    .openapi(testPaymentRoute, async (c) => {
      if (!(await testPaymentsEnabled(context))) throw problems.notFound("Test payments");
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const session = await authenticateClientToken(context.store, {
        sessionId: id,
        clientToken: body.clientToken,
        use: "write",
      });
      const result = await sendTestPayment(context, {
        session,
        amount: body.amount === undefined ? undefined : BigInt(body.amount),
        submit: true,
      });
      const current = await readSessionWithSurroundings(context.store, session.id);
      return c.json({ ...result, session: await publicSessionView(context, current) }, 200);
    })
    .openapi(claimRoute, async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const session = await authenticateClientToken(context.store, {
        sessionId: id,
        clientToken: body.clientToken,
        use: "claim",
      });
      const claim = await claimCertificate(context, { orderId: session.orderId, walletAddress: body.walletAddress });
      return c.json(claim, 200);
    });
}
