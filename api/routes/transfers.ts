import { OpenAPIHono, z } from "@hono/zod-openapi";
import { isAddress, isHash } from "viem";
import type { AppContext } from "../app-context.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import { listTransfers } from "../views/transfer-list.js";
import type { AppEnv } from "./app-env.js";

const blockNumber = z
  .string()
  .regex(/^\d{1,20}$/, "a block number in decimal")
  .transform((value) => BigInt(value));

const TransfersQuery = z.object({
  txHash: z
    .string()
    .refine((value) => isHash(value), "a 32-byte transaction hash in hex")
    .optional(),
  from: z
    .string()
    .refine((value) => isAddress(value, { strict: false }), "an address")
    .optional(),
  to: z
    .string()
    .refine((value) => isAddress(value, { strict: false }), "an address")
    .optional(),
  fromBlock: blockNumber.optional(),
  toBlock: blockNumber.optional(),
  network: z.string().optional(),
  cursor: z
    .string()
    .max(500)
    .optional()
    .openapi({ description: "`nextCursor` of the previous page; anything else is `invalid_cursor`" }),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export const TransferSchema = z
  .object({
    network: z.string(),
    chainId: z.number().int(),
    transactionHash: z.string(),
    logIndex: z.number().int(),
    blockNumber: z.string().openapi({ description: "decimal string" }),
    blockHash: z.string(),
    blockTimestamp: z.string().openapi({ description: "ISO 8601" }),
    token: z.string(),
    from: z.string(),
    to: z.string(),
    amount: z.string().openapi({ description: "USDC base units (6 decimals) as a decimal string", example: "25000000" }),
    confirmations: z.number().int(),
  })
  .openapi("Transfer");

const route = declareRoute({
  method: "get",
  path: "/",
  summary: "Indexed USDC transfers to the partner's payment addresses",
  description:
    "For reconciliation and audit. Answered from the index, ordered by chain, block and log index; filters combine with AND.",
  security: CALLERS.keyRead,
  request: { query: TransfersQuery },
  responses: {
    200: {
      description: "A page of transfers",
      content: { "application/json": { schema: z.object({ data: z.array(TransferSchema), nextCursor: z.string().nullable() }) } },
    },
  },
});

export function transfersRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>().openapi(route, async (c) => {
    const page = await listTransfers(context, { partnerId: c.get("partner").id, ...c.req.valid("query") });
    return c.json(page, 200);
  });
}
