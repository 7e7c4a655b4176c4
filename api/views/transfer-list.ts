import { getAddress, isAddressEqual, isHash } from "viem";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { keysetPage, type Page } from "../http/cursor.js";
import { problems } from "../http/problem.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedTransfer, TransferPosition } from "../indexed/indexed-chain.js";
import { paymentAddressesOf } from "../partners/payment-addresses.js";
import { checksum } from "../values/checksum-address.js";

/** A transfer as `GET /v1/transfers` shows it: addresses checksummed, amounts and blocks as decimal strings. */
export type TransferView = {
  network: string;
  chainId: number;
  transactionHash: string;
  logIndex: number;
  blockNumber: string;
  blockHash: string;
  blockTimestamp: string;
  token: string;
  from: string;
  to: string;
  amount: string;
  confirmations: number;
};

/** Chain id and log index are 32-bit columns in the index; a block number stays within 64 bits. */
const INT32_MAX = 2_147_483_647;
const TransferCursor = z.object({
  c: z.number().int().min(1).max(INT32_MAX),
  b: z
    .string()
    .regex(/^\d{1,19}$/)
    .refine((value) => BigInt(value) <= 2n ** 63n - 1n),
  l: z.number().int().min(0).max(INT32_MAX),
});
type TransferCursor = z.infer<typeof TransferCursor>;

/**
 * The indexed USDC transfers to a partner's own payment addresses (reconciliation
 * and audit), ordered by chain, block and log index; the filters combine with AND.
 * `network` narrows to one enabled network (another name is `invalid_request`);
 * `to` narrows to one of the partner's addresses (any other answers an empty page:
 * a partner never sees transfers to an address that is not its own).
 */
export async function listTransfers(
  context: Pick<AppContext, "store" | "indexed" | "networks">,
  params: {
    partnerId: string;
    txHash?: string;
    from?: string;
    to?: string;
    fromBlock?: bigint;
    toBlock?: bigint;
    network?: string;
    cursor?: string;
    limit: number;
  },
): Promise<Page<TransferView>> {
  const networks = params.network === undefined ? context.networks : context.networks.filter((n) => n.name === params.network);
  if (networks.length === 0)
    throw problems.invalidRequest(`\`network\` must be one of ${context.networks.map((n) => n.name).join(", ")}.`);
  const to = params.to === undefined ? undefined : getAddress(params.to);
  const recipients = (await paymentAddressesOf(context.store, params.partnerId))
    .filter((row) => networks.some((network) => network.chainId === row.chain_id))
    .map((row) => getAddress(row.address))
    .filter((address) => to === undefined || isAddressEqual(address, to));
  const transactionHash = params.txHash;
  if (transactionHash !== undefined && !isHash(transactionHash))
    throw problems.invalidRequest("`txHash` must be a 32-byte transaction hash in hex.");

  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: TransferCursor,
    keyOf: (transfer: IndexedTransfer): TransferCursor => ({
      c: transfer.chainId,
      b: transfer.blockNumber.toString(),
      l: transfer.logIndex,
    }),
    fetch: async (after, take) => {
      if (recipients.length === 0) return [];
      const position: TransferPosition | undefined = after && {
        chainId: after.c,
        blockNumber: BigInt(after.b),
        logIndex: after.l,
      };
      return context.indexed.transfers({
        chainIds: networks.map((network) => network.chainId),
        transactionHash,
        from: params.from === undefined ? undefined : getAddress(params.from),
        to: recipients,
        fromBlock: params.fromBlock,
        toBlock: params.toBlock,
        after: position,
        limit: take,
      });
    },
    view: async (page) => {
      if (page.length === 0) return [];
      const heads = await context.indexed.heads();
      return page.map((transfer) => {
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
      });
    },
  });
}
