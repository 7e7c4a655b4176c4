import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { isAddress, isHash } from "viem";
import type { AppContext } from "../app-context.js";
import { checksum } from "../checksum-address.js";
import { decodeCursor, encodeCursor, splitPage } from "../http/cursor.js";
import type { PartnerVariables } from "../http/partner-auth.js";
import { problems } from "../http/problem.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import { paymentAddressesOf } from "../partners/api-keys.js";
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

/** Chain id and log index are 32-bit columns in the index; a block number stays within 64 bits. */
const INT32_MAX = 2_147_483_647;
const cursorSchema = z.object({
  c: z.number().int().min(1).max(INT32_MAX),
  b: z
    .string()
    .regex(/^\d{1,19}$/)
    .refine((value) => BigInt(value) <= 2n ** 63n - 1n),
  l: z.number().int().min(0).max(INT32_MAX),
});

const route = createRoute({
  method: "get",
  path: "/",
  summary: "Indexed USDC transfers to the partner's payment addresses",
  description:
    "For reconciliation and audit. Answered from the index, ordered by chain, block and log index; filters combine with AND.",
  security: [{ apiKey: [] }],
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
    const query = c.req.valid("query");
    const partner = c.get("partner");
    const networks = query.network === undefined ? context.networks : context.networks.filter((n) => n.name === query.network);
    if (networks.length === 0)
      throw problems.invalidRequest(`\`network\` must be one of ${context.networks.map((n) => n.name).join(", ")}.`);

    const own = (await paymentAddressesOf(context.store, partner.id)).filter((row) =>
      networks.some((network) => network.chainId === row.chain_id),
    );
    const recipients =
      query.to === undefined
        ? own.map((row) => row.address)
        : own.map((row) => row.address).filter((a) => a === query.to?.toLowerCase());
    if (recipients.length === 0) return c.json({ data: [], nextCursor: null }, 200);

    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, cursorSchema);
    const rows = await context.indexed.transfers({
      chainIds: networks.map((network) => network.chainId),
      transactionHash: query.txHash as `0x${string}` | undefined,
      from: query.from as `0x${string}` | undefined,
      to: recipients as `0x${string}`[],
      fromBlock: query.fromBlock,
      toBlock: query.toBlock,
      after: after && { chainId: after.c, blockNumber: BigInt(after.b), logIndex: after.l },
      limit: query.limit + 1,
    });
    const { page, last } = splitPage(rows, query.limit);
    const heads = await context.indexed.heads();
    return c.json(
      {
        data: page.map((transfer) => {
          const head = heads.get(transfer.chainId)?.blockNumber ?? transfer.blockNumber;
          return {
            network: networks.find((network) => network.chainId === transfer.chainId)?.name ?? String(transfer.chainId),
            chainId: transfer.chainId,
            transactionHash: transfer.transactionHash,
            logIndex: transfer.logIndex,
            blockNumber: transfer.blockNumber.toString(),
            blockHash: transfer.blockHash,
            blockTimestamp: new Date(Number(transfer.blockTimestamp) * 1000).toISOString(),
            token: checksum(transfer.token),
            from: checksum(transfer.from),
            to: checksum(transfer.to),
            amount: transfer.value.toString(),
            confirmations: confirmationsOf(transfer, head),
          };
        }),
        nextCursor:
          last === undefined ? null : encodeCursor({ c: last.chainId, b: last.blockNumber.toString(), l: last.logIndex }),
      },
      200,
    );
  });
}
