import { z } from "@hono/zod-openapi";
import { type Address, getAddress, type Hex, isAddress, isHex } from "viem";
import type { AuthorizationSubmission } from "./authorization-checks.js";

const address = z.string().refine((value) => isAddress(value, { strict: false }), "an address");
const uint256 = z.string().regex(/^(0|[1-9]\d{0,77})$/, "a whole number as a decimal string");

/** The body of an EIP-3009 authorization, as the customer's wallet signed it (numbers as decimal strings). */
export const AuthorizationBody = z
  .object({
    authorization: z
      .object({
        from: address,
        to: address,
        value: uint256,
        validAfter: uint256,
        validBefore: uint256,
        nonce: z.string().refine((value) => isHex(value) && value.length === 66, "32 bytes in hex"),
      })
      .strict(),
    signature: z
      .string()
      .refine((value) => isHex(value) && value.length >= 132 && value.length <= 20_000, "a hex signature")
      .openapi({ description: "65-byte EOA signature, or an EIP-1271 smart-wallet signature" }),
    domain: z
      .object({ chainId: z.number().int().positive().optional(), verifyingContract: address.optional() })
      .optional()
      .openapi({ description: "The EIP-712 domain the wallet signed against, checked against the session's network and token" }),
  })
  .openapi("TransferAuthorization");

export function toSubmission(body: z.infer<typeof AuthorizationBody>): AuthorizationSubmission {
  const { authorization } = body;
  return {
    authorization: {
      from: getAddress(authorization.from),
      to: getAddress(authorization.to),
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce.toLowerCase() as Hex,
    },
    signature: body.signature as Hex,
    domain:
      body.domain === undefined
        ? undefined
        : {
            chainId: body.domain.chainId,
            verifyingContract:
              body.domain.verifyingContract === undefined ? undefined : (getAddress(body.domain.verifyingContract) as Address),
          },
  };
}

export const RelayAnswerSchema = z
  .object({
    status: z.enum(["submitted", "mined"]),
    authorizationId: z.string(),
    transactionHash: z.string(),
    relayer: z.string(),
  })
  .openapi("RelayedAuthorization");

/** One relayed authorization and what it cost (`relayView`): on an order's payment and a purchase's gasless view. */
export const RelayViewSchema = z
  .object({
    id: z.string(),
    status: z.enum(["queued", "submitted", "mined", "failed"]),
    from: z.string(),
    transactionHash: z.string().nullable(),
    replacedTransactions: z.array(z.string()),
    relayer: z.string().nullable(),
    gasUsed: z.string().nullable(),
    effectiveGasPrice: z.string().nullable(),
    gasCostWei: z.string().nullable().openapi({ description: "What relaying cost the service, in wei of ETH" }),
    failure: z.object({ code: z.string(), detail: z.string().nullable() }).nullable(),
    submittedAt: z.string().nullable(),
  })
  .openapi("RelayView");

const TokenDomainSchema = z.object({
  name: z.string(),
  version: z.string(),
  chainId: z.number().int(),
  verifyingContract: z.string(),
});

/**
 * The EIP-712 typed data of a `TransferWithAuthorization`, as a wallet's `eth_signTypedData_v4`
 * takes it (numbers as decimal strings, `types` with `EIP712Domain`): built by the service
 * (api/gasless/eip3009.ts), signed by the wallet as served.
 */
export const TransferAuthorizationTypedDataSchema = z
  .object({
    types: z.object({
      EIP712Domain: z.array(z.object({ name: z.string(), type: z.string() })),
      TransferWithAuthorization: z.array(z.object({ name: z.string(), type: z.string() })),
    }),
    primaryType: z.literal("TransferWithAuthorization"),
    domain: TokenDomainSchema,
    message: z.object({
      from: z.string(),
      to: z.string(),
      value: z.string(),
      validAfter: z.string(),
      validBefore: z.string().openapi({ description: "Unix seconds; paying a session: its expiry, rounded down" }),
      nonce: z.string().openapi({ description: "Fresh and random on every read" }),
    }),
  })
  .openapi("TransferAuthorizationTypedData");

/** What a page needs to offer paying without gas: the token's domain, the typed data to sign, and the latest relay. */
export const GaslessViewSchema = z.object({
  available: z.boolean(),
  domain: TokenDomainSchema.nullable().openapi({ description: "The token's own EIP-712 domain (null when not available)" }),
  typedData: TransferAuthorizationTypedDataSchema.nullable().openapi({
    description:
      "What the payer's wallet signs, exactly as served: the amount due to the payment address, valid until the session's " +
      "expiry, a fresh nonce. Null when not available, or when the read does not name the payer's wallet.",
  }),
  authorization: RelayViewSchema.nullable(),
});
