import { OpenAPIHono, z } from "@hono/zod-openapi";
import { rateLimiter } from "hono-rate-limiter";
import type { AppContext } from "../../app-context.js";
import type { PortalSettings } from "../../config/option-types.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { clientIp } from "../../http/client-ip.js";
import { problem, problemResponse } from "../../http/problem.js";
import { verifyTokenId, verifyTransaction, verifyWallet } from "../../purchases/certificate-verification.js";
import type { AppEnv } from "../app-env.js";
import { AddressSchema, jsonResponse, ProblemSchema, problemResponses, TransactionHashSchema } from "./schemas.js";

const VerificationSchema = z
  .object({
    status: z.enum(["valid", "pending", "revoked", "mismatch"]),
    chainId: z.number().int(),
    contract: z.string(),
    tokenId: z.string(),
    owner: z.string(),
    purchaseId: z.string(),
    offering: z.object({ id: z.string(), name: z.string(), issuer: z.string() }).nullable(),
    mint: z.object({ transactionHash: z.string(), blockNumber: z.string(), confirmations: z.number().int() }),
  })
  .openapi("CertificateVerification");

const TokenIdParam = z.object({
  tokenId: z
    .string()
    .regex(/^(\d{1,78}|0x[0-9a-fA-F]{1,64})$/, "a token id in decimal or 0x-hex")
    .openapi({ description: "uint256 token id, decimal or 0x-hex (it equals the bytes32 purchase id)" }),
});

const responses = {
  200: jsonResponse("The certificate as the chain shows it, checked against our records", VerificationSchema),
  ...problemResponses,
  429: { description: "Too many requests from this address", content: { "application/problem+json": { schema: ProblemSchema } } },
};

const notFound = (what: string) => problem("certificate_not_found", `No certificate was minted for ${what}.`);

/**
 * `/api/rwa/verify`: public certificate verification from indexed chain data, no
 * personal data, rate limited per client IP (in-process memory: each replica
 * counts on its own, so the effective limit is per replica).
 */
export function verifyRoutes(context: AppContext, portal: PortalSettings) {
  const app = new OpenAPIHono<AppEnv>();
  app.use(
    "*",
    rateLimiter<AppEnv>({
      windowMs: portal.verifyRateLimit.windowMs,
      limit: portal.verifyRateLimit.limit,
      standardHeaders: "draft-7",
      keyGenerator: (c) => clientIp(c, portal.trustProxy),
      handler: (c) =>
        problemResponse(
          c,
          problem(
            "rate_limited",
            `At most ${portal.verifyRateLimit.limit} verification requests per ${portal.verifyRateLimit.windowMs / 1000} s per client; retry later.`,
          ),
        ),
    }),
  );
  return app
    .openapi(
      declareRoute({
        method: "get",
        path: "/certificates/{tokenId}",
        security: CALLERS.anyone,
        tags: ["RWA: verification"],
        summary: "Verify a certificate by token id",
        request: { params: TokenIdParam },
        responses,
      }),
      async (c) => {
        const { tokenId } = c.req.valid("param");
        const [result] = await verifyTokenId(context, BigInt(tokenId));
        if (result === undefined) throw notFound(`token id ${tokenId}`);
        return c.json(result, 200);
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/transactions/{hash}",
        security: CALLERS.anyone,
        tags: ["RWA: verification"],
        summary: "Verify the certificate minted in a transaction, or paid for by a settled payment transaction",
        request: { params: z.object({ hash: TransactionHashSchema }) },
        responses,
      }),
      async (c) => {
        const { hash } = c.req.valid("param");
        const [result] = await verifyTransaction(context, hash);
        if (result === undefined) throw notFound(`transaction ${hash}`);
        return c.json(result, 200);
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/wallets/{address}",
        security: CALLERS.anyone,
        tags: ["RWA: verification"],
        summary: "Verify every certificate held by a wallet",
        request: { params: z.object({ address: AddressSchema }) },
        responses: {
          ...responses,
          200: jsonResponse("Certificates of the wallet", z.object({ address: z.string(), data: z.array(VerificationSchema) })),
        },
      }),
      async (c) => {
        const { address } = c.req.valid("param");
        const data = await verifyWallet(context, address);
        return c.json({ address, data }, 200);
      },
    );
}
