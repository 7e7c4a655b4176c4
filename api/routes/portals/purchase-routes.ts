import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { findEligibility } from "../../compliance/eligibility.js";
import type { PortalSettings } from "../../config/option-types.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import {
  claimPurchaseCertificate,
  listPurchases,
  loadPurchaseRecords,
  ownPurchase,
  pageOfPurchases,
  purchaseView,
  startPurchase,
} from "../../purchases/purchases.js";
import { submitWalletSettlement } from "../../settlement/submit-purchase-payment.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import {
  AddressSchema,
  CertificateClaimSchema,
  IdParam,
  jsonBody,
  jsonResponse,
  PageQuery,
  PurchaseListSchema,
  PurchaseSchema,
  problemResponses,
  TransactionHashSchema,
} from "./schemas.js";

const CheckoutBody = z.object({
  offeringId: z.string().min(1).max(100),
  units: z.number().int().min(1).max(1_000_000_000),
  recipient: AddressSchema.optional().openapi({ description: "Wallet the certificate is minted to; default: the investor's" }),
});
const SettlementBody = z.object({ purchaseId: z.string().min(1).max(100), transactionHash: TransactionHashSchema });
const SettlementSchema = z.object({
  purchaseId: z.string(),
  status: z.enum(["settled", "payment_pending"]),
  transactionHash: z.string(),
  confirmations: z.number().int(),
  requiredConfirmations: z.number().int(),
});
const ClaimBody = z.object({
  walletAddress: AddressSchema.optional().openapi({ description: "If given, must be the purchase's recipient" }),
});
const CertificateListSchema = z.object({
  data: z.array(
    z.object({
      purchaseId: z.string(),
      offering: z.object({ id: z.string(), name: z.string() }),
      units: z.number().int(),
      onchainPurchaseId: z.string().nullable(),
      certificate: PurchaseSchema.shape.certificate,
    }),
  ),
});

/** `/api/rwa/checkout`, `/settlements/wallet` and `/certificates`: the signed-in investor's purchases. */
export function purchaseRoutes(context: AppContext, portal: PortalSettings) {
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>()
    .openapi(
      declareRoute({
        method: "post",
        path: "/checkout",
        security: CALLERS.investor,
        tags: ["RWA: investor purchases"],
        summary: "Start a purchase: reserve units and get the exact payment to make",
        request: { body: jsonBody(CheckoutBody) },
        responses: { 201: jsonResponse("The purchase, units reserved until expiresAt", PurchaseSchema), ...problemResponses },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const record = await startPurchase(context, portal, { investor: c.get("portalSession").address, ...body });
        return c.json(purchaseView(record), 201);
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/checkout",
        security: CALLERS.investor,
        tags: ["RWA: investor purchases"],
        summary: "The investor's own purchases, newest first",
        request: { query: PageQuery },
        responses: { 200: jsonResponse("A page of purchases", PurchaseListSchema), ...problemResponses },
      }),
      async (c) => {
        const query = c.req.valid("query");
        const address = c.get("portalSession").address;
        const frozen = (await findEligibility(context.store, address))?.frozen_at != null;
        return c.json(
          await pageOfPurchases(context.store, { investor: address, cursor: query.cursor, limit: query.limit, frozen }),
          200,
        );
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/checkout/{id}",
        security: CALLERS.investor,
        tags: ["RWA: investor purchases"],
        summary: "One of the investor's own purchases",
        request: { params: IdParam },
        responses: { 200: jsonResponse("The purchase", PurchaseSchema), ...problemResponses },
      }),
      async (c) => {
        const address = c.get("portalSession").address;
        const purchase = await ownPurchase(context.store, address, c.req.valid("param").id);
        const [record] = await loadPurchaseRecords(context.store, [purchase]);
        const frozen = (await findEligibility(context.store, address))?.frozen_at != null;
        return c.json(purchaseView(record as NonNullable<typeof record>, { frozen }), 200);
      },
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/settlements/wallet",
        security: CALLERS.investor,
        tags: ["RWA: investor purchases"],
        summary: "Submit the hash of the payment sent from the investor's wallet",
        description:
          "The transfer is credited from what the index shows: from this investor's wallet, the purchase's exact amount, to its settlement address, on its network, never credited before.",
        request: { body: jsonBody(SettlementBody) },
        responses: { 200: jsonResponse("Settled, or seen and waiting for confirmations", SettlementSchema), ...problemResponses },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const result = await submitWalletSettlement(context, portal, {
          investor: c.get("portalSession").address,
          purchaseId: body.purchaseId,
          transactionHash: body.transactionHash,
        });
        return c.json(result, 200);
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/certificates",
        security: CALLERS.investor,
        tags: ["RWA: certificates"],
        summary: "The investor's certificates (settled purchases of offerings with certificates)",
        responses: { 200: jsonResponse("Certificates", CertificateListSchema), ...problemResponses },
      }),
      async (c) => {
        const address = c.get("portalSession").address;
        const purchases = await listPurchases(context.store, { investor: address, limit: 1000 });
        const frozen = (await findEligibility(context.store, address))?.frozen_at != null;
        const records = await loadPurchaseRecords(context.store, purchases);
        const data = records
          .filter((record) => record.session?.status === "settled" && record.session.certificateEnabled)
          .map((record) => {
            const view = purchaseView(record, { frozen });
            return {
              purchaseId: view.id,
              offering: view.offering,
              units: view.units,
              onchainPurchaseId: view.onchainPurchaseId,
              certificate: view.certificate,
            };
          });
        return c.json({ data }, 200);
      },
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/certificates/{purchaseId}/claim",
        security: CALLERS.investor,
        tags: ["RWA: certificates"],
        summary: "Get the signed voucher to mint the certificate of a settled purchase",
        description: "Same answer as the commerce claim: the voucher, its signature and the ready-to-send mint transaction.",
        request: {
          params: z.object({ purchaseId: z.string().min(1).max(100) }),
          body: { ...jsonBody(ClaimBody), required: false },
        },
        responses: { 200: jsonResponse("The voucher", CertificateClaimSchema), ...problemResponses },
      }),
      async (c) => {
        const claim = await claimPurchaseCertificate(context, {
          investor: c.get("portalSession").address,
          purchaseId: c.req.valid("param").purchaseId,
          walletAddress: c.req.valid("json").walletAddress,
        });
        return c.json(claim, 200);
      },
    );
}
