import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress, isHash } from "viem";
import { type AppContext, networkByChainId } from "../app-context.js";
import { claimCertificate } from "../certificates/claim-certificate.js";
import { authenticateClientToken } from "../checkout/client-tokens.js";
import { presentationView, readPresentation } from "../checkout/hosted-options.js";
import { getSession, saveCustomerDetails } from "../checkout/session-record.js";
import { sessionView } from "../checkout/session-view.js";
import { sendTestPayment, testPaymentsEnabled } from "../checkout/test-payment.js";
import { gaslessSessionView } from "../gasless/gasless-view.js";
import { ProblemError, problems } from "../http/problem.js";
import { shownConfirmations } from "../indexed/confirmations.js";
import { readBranding } from "../partners/branding.js";
import { submitTransactionHash } from "../settlement/submit-transaction-hash.js";
import type { CheckoutSessionTable } from "../store/database.js";
import type { AppEnv } from "./app-env.js";

const clientToken = z.string().min(1).max(200);
const SessionParam = z.object({ id: z.string().max(100) });

const ContactSchema = z
  .object({
    email: z.string().email().max(254),
    name: z.string().min(1).max(200).optional(),
    phone: z.string().max(40).optional(),
  })
  .strict();
const DeliverySchema = z
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
const ok = (description: string) => ({ 200: { description, content: { "application/json": { schema: z.any() } } } });

async function publicSessionView(context: AppContext, session: CheckoutSessionTable) {
  // One round trip: the order, its certificate and the session's credited payment.
  const row = await context.store
    .selectFrom("orders")
    .leftJoin("certificate", "certificate.order_id", "orders.id")
    .leftJoin("payment", (join) =>
      join.on("payment.session_id", "=", session.id).on("payment.status", "in", ["pending", "settled", "attached"]),
    )
    .select([
      "orders.id as order_id",
      "orders.purchase_id",
      "certificate.status as certificate_status",
      "certificate.mint_transaction_hash",
      "payment.transaction_hash",
      "payment.block_number",
    ])
    .where("orders.id", "=", session.order_id)
    .executeTakeFirstOrThrow();
  const presentation = presentationView(session.id, await readPresentation(context.store, session.id), null);
  const head = row.block_number == null ? undefined : (await context.indexed.heads()).get(session.chain_id)?.blockNumber;
  // A transfer submitted on this session that does not pay it (wrong amount, late): the customer is told what arrived.
  const unresolved = await context.store
    .selectFrom("payment")
    .select(["transaction_hash", "amount", "reason", "status"])
    .where("session_id", "=", session.id)
    .where("status", "in", ["unresolved", "refund_requested"])
    .orderBy("created_at", "desc")
    .executeTakeFirst();
  return {
    ...sessionView(session, { orderId: row.order_id, purchaseId: row.purchase_id }),
    // The customer sees where to go and what they buy; the partner's metadata stays between partner and service.
    successUrl: presentation.successUrl,
    cancelUrl: presentation.cancelUrl,
    customer: presentation.customer,
    lineItems: presentation.lineItems,
    merchant: await readBranding(context.store, session.partner_id),
    confirmations: row.block_number == null ? null : shownConfirmations({ blockNumber: BigInt(row.block_number) }, head),
    requiredConfirmations: networkByChainId(context, session.chain_id)?.confirmations ?? null,
    unresolvedPayment:
      unresolved === undefined
        ? null
        : {
            transactionHash: unresolved.transaction_hash,
            amount: unresolved.amount,
            expectedAmount: session.amount_due,
            reason: unresolved.reason,
            status: unresolved.status,
          },
    testPayments: testPaymentsEnabled(context, session),
    transactionHash: row.transaction_hash ?? null,
    contactProvided: session.contact_json !== null,
    deliveryProvided: session.delivery_json !== null,
    certificate: {
      enabled: session.certificate_enabled === 1,
      status: row.certificate_status ?? (session.certificate_enabled === 1 ? "awaiting_wallet" : "not_requested"),
      mintTransactionHash: row.mint_transaction_hash ?? null,
    },
    ...(await gaslessSessionView(context, session)),
  };
}

const validateRoute = createRoute({
  method: "post",
  path: "/sessions/{id}/validate",
  summary: "Validate a session for the hosted checkout (browser)",
  request: { params: SessionParam, body: json(z.object({ clientToken })) },
  responses: ok("The session as the customer may see it"),
});
const detailsRoute = createRoute({
  method: "post",
  path: "/sessions/{id}/details",
  summary: "Contact and delivery details (browser)",
  request: {
    params: SessionParam,
    body: json(z.object({ clientToken, contact: ContactSchema, delivery: DeliverySchema.optional() })),
  },
  responses: ok("Saved"),
});
const paymentsRoute = createRoute({
  method: "post",
  path: "/payments",
  summary: "Submit the transaction hash of the payment (browser)",
  request: {
    body: json(
      z.object({
        clientToken,
        transactionHash: z.string().refine((value) => isHash(value), "a 32-byte transaction hash in hex"),
      }),
    ),
  },
  responses: ok("Settled or pending; a transaction that does not pay the session is a problem with its reason"),
});
const claimRoute = createRoute({
  method: "post",
  path: "/sessions/{id}/claim",
  summary: "Claim the certificate of a settled purchase (browser)",
  request: {
    params: SessionParam,
    body: json(
      z.object({ clientToken, walletAddress: z.string().refine((value) => isAddress(value, { strict: false }), "an address") }),
    ),
  },
  responses: ok("Signed voucher and the ready-to-send mint transaction"),
});

const testPaymentRoute = createRoute({
  method: "post",
  path: "/sessions/{id}/test-payment",
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
  responses: ok("The transfer sent and the answer of its submission"),
});

/** Browser operations of the hosted checkout and claim page: the client token rides in the JSON body. */
export function publicCheckoutRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>()
    .openapi(validateRoute, async (c) => {
      const { id } = c.req.valid("param");
      const session = await authenticateClientToken(context.store, {
        sessionId: id,
        clientToken: c.req.valid("json").clientToken,
        use: "read",
      });
      return c.json(await publicSessionView(context, session), 200);
    })
    .openapi(detailsRoute, async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const session = await authenticateClientToken(context.store, {
        sessionId: id,
        clientToken: body.clientToken,
        use: "write",
      });
      if (session.status !== "awaiting_payment") {
        throw new ProblemError({
          status: 409,
          code: "session_not_open",
          title: "The session no longer takes details",
          detail: `The session is ${session.status}.`,
        });
      }
      if (session.shipping_required === 1 && body.delivery === undefined) {
        throw new ProblemError({
          status: 400,
          code: "invalid_request",
          title: "The request is not valid",
          detail: "delivery: this order ships, so a delivery address is required",
        });
      }
      await saveCustomerDetails(context.store, {
        sessionId: session.id,
        contact: body.contact,
        delivery: body.delivery,
        now: Date.now(),
      });
      const updated = await getSession(context.store, session.id);
      return c.json(await publicSessionView(context, updated), 200);
    })
    .openapi(paymentsRoute, async (c) => {
      const body = c.req.valid("json");
      const session = await authenticateClientToken(context.store, { clientToken: body.clientToken, use: "read" });
      const result = await submitTransactionHash(context, { session, transactionHash: body.transactionHash as Hex });
      // Recording the payment moves the session to the answer's status (payment_pending
      // or settled); re-read it only when it was not there already.
      const current = result.status !== session.status ? await getSession(context.store, session.id) : session;
      return c.json({ ...result, session: await publicSessionView(context, current) }, 200);
    })
    .openapi(testPaymentRoute, async (c) => {
      if (!testPaymentsEnabled(context)) throw problems.notFound("Test payments");
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
      const current = await getSession(context.store, session.id);
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
      const claim = await claimCertificate(context, { orderId: session.order_id, walletAddress: body.walletAddress as Address });
      return c.json(claim, 200);
    });
}
