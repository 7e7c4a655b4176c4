import { z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress, isHash, isHex } from "viem";
import { SESSION_STATUSES } from "../../checkout/list-sessions.js";
import { errorResponses } from "../../http/openapi-contract.js";
import type { ProblemCode } from "../../http/problem-catalogue.js";

/** Shared request and response shapes of the portal routes. */

export const AddressSchema = z
  .string()
  .refine((value): value is Address => isAddress(value, { strict: false }), "an address (0x followed by 40 hex digits)")
  .openapi({ example: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" });

export const TransactionHashSchema = z
  .string()
  .refine((value): value is Hex => isHash(value), "a 32-byte transaction hash in hex");

export const SignatureSchema = z
  .string()
  .refine((value): value is Hex => isHex(value) && value.length >= 132, "a hex signature")
  .openapi({ description: "EIP-191 signature of the message (65 bytes), or an EIP-1271/6492 smart-wallet signature" });

export const UsdcAmountSchema = z
  .string()
  .regex(/^(0|[1-9]\d{0,29})$/, "USDC base units (6 decimals) as an integer string")
  .openapi({ example: "25000000" });

export const IsoInstantSchema = z.iso.datetime({ offset: true }).openapi({ example: "2030-01-01T00:00:00Z" });

export const JurisdictionSchema = z
  .string()
  .regex(/^[A-Za-z]{2}$/, "an ISO 3166-1 alpha-2 country code")
  .openapi({ example: "DE" });

export const IdParam = z.object({ id: z.string().min(1).max(100) });

export const PageQuery = z.object({
  cursor: z.string().max(500).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    instance: z.string(),
    requestId: z.string().optional(),
  })
  .openapi("Problem");

/**
 * Error answers of the portal routes (RFC 9457 problem+json with a stable `code`), from
 * the problem registry: the portals' own family of codes, at their registered statuses.
 */
export const PORTAL_PROBLEM_CODES = [
  "invalid_request",
  "unauthenticated",
  "forbidden",
  "wrong_portal",
  "portal_not_allowed",
  "wallet_frozen",
  "not_eligible",
  "recipient_not_eligible",
  "not_found",
  "certificate_not_found",
  "issuer_exists",
  "payment_address_taken",
  "settlement_address_taken",
  "invalid_offering_state",
  "offering_not_open",
  "offering_paused",
  "offering_not_open_yet",
  "insufficient_units",
  "investor_limit_exceeded",
  "too_many_open_purchases",
  "unverified_hold_limit",
  "purchase_not_payable",
  "recipient_mismatch",
  "certificate_not_available",
  "certificate_revoked",
  "member_exists",
  "member_limit_reached",
  "payment_not_unresolved",
  "payment_of_another_partner",
  "order_already_settled",
  "order_not_rwa",
  "idempotency_conflict",
  "session_not_open",
  "session_expired",
  "unsupported_network",
  "settlement_address_not_watched",
  "no_payment_address",
  "wrong_payer",
  "voucher_key_missing",
  "reference_space_exhausted",
] as const satisfies readonly ProblemCode[];
export const problemResponses = errorResponses(...PORTAL_PROBLEM_CODES);

export const jsonBody = <schema extends z.ZodType>(schema: schema) => ({
  required: true,
  content: { "application/json": { schema } },
});

export const jsonResponse = <schema extends z.ZodType>(description: string, schema: schema) => ({
  description,
  content: { "application/json": { schema } },
});

export const OfferingSchema = z
  .object({
    id: z.string(),
    status: z.enum(["draft", "in_review", "rejected", "open", "paused", "closed"]),
    issuer: z.object({ id: z.string(), name: z.string() }),
    name: z.string(),
    description: z.string(),
    network: z.string(),
    chainId: z.number().int(),
    assetToken: z.string().nullable(),
    unitPriceUsdc: z.string(),
    minUnits: z.number().int(),
    maxUnitsPerInvestor: z.number().int(),
    totalUnits: z.number().int(),
    unitsAvailable: z.number().int(),
    opensAt: z.string(),
    closesAt: z.string(),
    settlementAddress: z.string(),
    certificate: z.object({ enabled: z.boolean() }),
    eligibility: z.object({
      requireKyc: z.boolean(),
      jurisdictions: z.array(z.string()).nullable(),
      blockedJurisdictions: z.array(z.string()),
      requireAccreditation: z.boolean(),
    }),
    reviewReason: z.string().nullable(),
    pausedBy: z.string().nullable(),
    closeReason: z.string().nullable(),
    submittedAt: z.string().nullable(),
    approvedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Offering");

export const OfferingListSchema = z.object({ data: z.array(OfferingSchema), nextCursor: z.string().nullable() });

export const PurchaseSchema = z
  .object({
    id: z.string(),
    status: z.enum(SESSION_STATUSES),
    offering: z.object({ id: z.string(), name: z.string() }),
    investor: z.string(),
    recipient: z.string(),
    units: z.number().int(),
    unitPriceUsdc: z.string(),
    totalPriceUsdc: z.string(),
    network: z.string(),
    chainId: z.number().int(),
    expiresAt: z.string(),
    reservation: z.enum(["held", "released"]),
    payment: z
      .object({
        tokenAddress: z.string(),
        recipient: z.string(),
        amount: z.string().openapi({ description: "Exact amount to send: total plus a sub-cent reference offset" }),
        totalPriceUsdc: z.string(),
        chainId: z.number().int(),
        decimals: z.literal(6),
        uri: z.string().openapi({ description: "EIP-681 payment link" }),
      })
      .nullable(),
    settlement: z.object({ transactionHash: z.string(), status: z.string() }).nullable(),
    onchainPurchaseId: z
      .string()
      .nullable()
      .openapi({ description: "bytes32 purchase id; the certificate's token id is uint256 of it" }),
    certificate: z
      .object({
        status: z.enum(["not_requested", "awaiting_wallet", "voucher_issued", "pending", "minted"]),
        frozen: z.boolean(),
        tokenId: z.string().nullable(),
        contract: z.string().nullable(),
        owner: z.string().nullable(),
        mintTransactionHash: z.string().nullable(),
      })
      .nullable(),
    amountRefunded: z.string().openapi({ description: "succeeded refunds, base units (docs/refunds.md)" }),
    amountRefundPending: z.string().openapi({ description: "ready and pending refunds, base units" }),
    refundStatus: z.enum(["none", "partial", "full"]).openapi({ description: "`full`: the units went back to the offering" }),
    createdAt: z.string(),
  })
  .openapi("RwaPurchase");

export const PurchaseListSchema = z.object({ data: z.array(PurchaseSchema), nextCursor: z.string().nullable() });

export const EligibilitySchema = z
  .object({
    address: z.string(),
    kycStatus: z.enum(["pending", "approved", "rejected", "needs_update"]),
    jurisdiction: z.string().nullable(),
    accredited: z.boolean(),
    accreditationExpiresAt: z.string().nullable(),
    frozen: z.boolean(),
    frozenReason: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .openapi("InvestorEligibility");

export const CertificateClaimSchema = z
  .object({
    voucher: z.object({ buyer: z.string(), purchaseId: z.string(), tokenURI: z.string(), deadline: z.string() }),
    signature: z.string(),
    contract: z.object({ address: z.string(), chainId: z.number().int() }),
    transaction: z.object({ to: z.string(), data: z.string(), chainId: z.number().int() }),
  })
  .openapi("CertificateClaim");

export const IssuerSchema = z
  .object({
    id: z.string(),
    address: z.string(),
    name: z.string(),
    partnerId: z.string(),
    status: z.enum(["active", "disabled"]),
    createdAt: z.string(),
  })
  .openapi("Issuer");
