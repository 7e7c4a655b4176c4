import { z } from "@hono/zod-openapi";
import type { OfferingInput } from "../../offerings/offerings.js";
import { AddressSchema, IsoInstantSchema, JurisdictionSchema, UsdcAmountSchema } from "./schemas.js";

/** An offering draft as docs/portals.md writes it, plus blocked jurisdictions and an accreditation requirement. */
export const OfferingBody = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(10_000),
    network: z.string().min(1).max(40).openapi({ example: "base" }),
    assetToken: AddressSchema.nullable().optional().openapi({ description: "Token contract of the asset, when it is tokenised" }),
    unitPriceUsdc: UsdcAmountSchema,
    minUnits: z.number().int().min(1),
    maxUnitsPerInvestor: z.number().int().min(1),
    totalUnits: z.number().int().min(1).max(1_000_000_000),
    opensAt: IsoInstantSchema,
    closesAt: IsoInstantSchema,
    settlementAddress: AddressSchema.openapi({
      description: "Must be one of the payment addresses the indexer watches on `network`",
    }),
    certificate: z.object({ enabled: z.boolean() }),
    eligibility: z.object({
      requireKyc: z.boolean(),
      jurisdictions: z.array(JurisdictionSchema).max(300).optional().openapi({ description: "Allowed; absent: any" }),
      blockedJurisdictions: z.array(JurisdictionSchema).max(300).optional(),
      requireAccreditation: z.boolean().optional(),
    }),
  })
  .openapi("OfferingDraft");

export function offeringInput(body: z.infer<typeof OfferingBody>): OfferingInput {
  return {
    ...body,
    unitPriceUsdc: BigInt(body.unitPriceUsdc),
    opensAt: Date.parse(body.opensAt),
    closesAt: Date.parse(body.closesAt),
  };
}
