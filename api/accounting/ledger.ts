import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { keysetPage, type Page } from "../http/cursor.js";
import type { IndexedRewardClaim } from "../indexed/indexed-chain.js";
import { paymentAddressesOnChain } from "../partners/payment-addresses.js";
import { rewardFundersOnChain, rewardsByOnchainIds } from "../rewards/reward-record.js";
import { checksum } from "../values/checksum-address.js";
import { gatherLedgerFacts, type OrderDetails, orderDetailsOf } from "./ledger-facts.js";
import { fundingClaimEntry, type LedgerEntry, ledgerEntriesOf } from "./ledger-rules.js";
import { adjustmentsReportedIn } from "./period-record.js";
import type { ResolvedRange } from "./range.js";

/** Whose books: one partner's payment addresses, or every partner's (an auditor). */
export type BooksScope = { partnerId: string | undefined };

/**
 * A ledger entry with what an accountant files it under: its order's external id and
 * metadata, when it has an order; and, on an `adjustment` row, the closed period's fact it
 * reports (`ordinal`: its place among the range's adjustments, which come first).
 */
export type BookEntry = LedgerEntry &
  Partial<OrderDetails> & {
    adjustment?: { ordinal: number; periodId: string; entryKind: string; balanceEffect: bigint };
  };

/** A ledger entry on the wire (SPEC 17): amounts and blocks as decimal strings, addresses EIP-55, optional ids only when set. */
export type LedgerEntryView = {
  kind: string;
  reason?: string;
  chainId: number;
  blockNumber: string;
  blockTime: string;
  blockHash: string;
  transactionHash: string;
  logIndex: number;
  from: string;
  to: string;
  value: string;
  paymentAddress: string;
  orderId?: string;
  externalOrderId?: string;
  refundId?: string;
  rewardId?: string;
  metadata?: Record<string, string>;
  periodId?: string;
  entryKind?: string;
  balanceEffect?: string;
};

/** A block's timestamp (seconds) as ISO 8601 UTC. */
export const blockTimeOf = (seconds: bigint) => new Date(Number(seconds) * 1000).toISOString();

export function ledgerEntryView(entry: BookEntry): LedgerEntryView {
  return {
    kind: entry.kind,
    ...(entry.reason === undefined ? {} : { reason: entry.reason }),
    chainId: entry.chainId,
    blockNumber: entry.blockNumber.toString(),
    blockTime: blockTimeOf(entry.blockTimestamp),
    blockHash: entry.blockHash,
    transactionHash: entry.transactionHash,
    logIndex: entry.logIndex,
    from: checksum(entry.from),
    to: checksum(entry.to),
    value: entry.value.toString(),
    paymentAddress: checksum(entry.paymentAddress),
    ...(entry.orderId === undefined ? {} : { orderId: entry.orderId }),
    ...(entry.externalOrderId === undefined ? {} : { externalOrderId: entry.externalOrderId }),
    ...(entry.refundId === undefined ? {} : { refundId: entry.refundId }),
    ...(entry.rewardId === undefined ? {} : { rewardId: entry.rewardId }),
    ...(entry.metadata === undefined ? {} : { metadata: entry.metadata }),
    ...(entry.adjustment === undefined
      ? {}
      : {
          periodId: entry.adjustment.periodId,
          entryKind: entry.adjustment.entryKind,
          balanceEffect: entry.adjustment.balanceEffect.toString(),
        }),
  };
}

/** The payment addresses in view on the range's chain (lower case). */
export async function booksAddresses(context: Pick<AppContext, "store">, scope: BooksScope, chainId: number) {
  return paymentAddressesOnChain(context.store, { chainId, partnerId: scope.partnerId });
}

/** What the books of a scope cover on a chain: payment addresses, and funding addresses that are not also payment addresses. */
export type BooksInView = {
  owners: { address: string; partnerId: string; role: "payment_address" | "funding_address" }[];
  /** Payment addresses (lower case): every transfer in and out is indexed. */
  addresses: ReadonlySet<string>;
  /** Funding-only addresses (lower case): their reward claims are indexed, not their transfers. */
  funders: ReadonlySet<string>;
};

/**
 * The addresses whose money is in the books (SPEC 17.1): the payment addresses, and every
 * address named as the funder of a voucher (a funding address is in the books like a
 * payment address). A funding address that is also a payment address is one address.
 */
export async function booksInView(context: Pick<AppContext, "store">, scope: BooksScope, chainId: number): Promise<BooksInView> {
  const payment = await booksAddresses(context, scope, chainId);
  const addresses = new Set(payment.map((row) => row.address));
  const funding = (await rewardFundersOnChain(context.store, { chainId, partnerId: scope.partnerId })).filter(
    (row) => !addresses.has(row.address),
  );
  return {
    owners: [
      ...payment.map((row) => ({ ...row, role: "payment_address" as const })),
      ...funding.map((row) => ({ ...row, role: "funding_address" as const })),
    ],
    addresses,
    funders: new Set(funding.map((row) => row.address)),
  };
}

/** The entries of reward claims paid from funding-only addresses, named after the service's rewards. */
export async function fundingClaimEntries(
  context: Pick<AppContext, "store">,
  claims: readonly IndexedRewardClaim[],
): Promise<LedgerEntry[]> {
  if (claims.length === 0) return [];
  const rewards = await rewardsByOnchainIds(context.store, [...new Set(claims.map((claim) => claim.rewardId))]);
  const byOnchainId = new Map(rewards.map((reward) => [reward.onchainId.toLowerCase(), reward]));
  return claims.map((claim) => fundingClaimEntry(claim, byOnchainId.get(claim.rewardId.toLowerCase())));
}

const inChainOrder = (a: Position, b: Position) =>
  a.blockNumber !== b.blockNumber ? (a.blockNumber < b.blockNumber ? -1 : 1) : a.logIndex - b.logIndex || a.leg - b.leg;

type Position = { blockNumber: bigint; logIndex: number; leg: 0 | 1 };
/** Where a page ended: after the adjustment of this ordinal (they come first), or after a transfer's leg. */
type PagePosition = { adjustment: number } | Position;

/**
 * The range's adjustment rows (SPEC 17.1): what was found since a period closed before
 * the range, at a block of the range, for an address in view. They open the range's
 * ledger, as what the earlier books are corrected by; `value` is the transfer's, and
 * `balanceEffect` what it changes of the address's balance (the reconciliation sums it).
 */
export async function adjustmentEntries(
  context: Pick<AppContext, "store">,
  params: { partnerId: string | undefined; range: ResolvedRange; inView: (address: string) => boolean },
): Promise<BookEntry[]> {
  const { range } = params;
  if (range.fromBlock > range.toBlock) return [];
  const found = await adjustmentsReportedIn(context.store, {
    partnerId: params.partnerId,
    chainId: range.chainId,
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
  });
  return found
    .filter((adjustment) => params.inView(adjustment.paymentAddress))
    .map((adjustment, ordinal) => {
      // Found before the evidence was kept (migration 0022): the block it was found at, the address on both sides.
      const evidence = adjustment.evidence ?? {
        blockNumber: adjustment.detectedBlock,
        blockHash: "0x",
        blockTimestamp: BigInt(Math.floor(adjustment.detectedAt / 1000)),
        from: adjustment.paymentAddress,
        to: adjustment.paymentAddress,
        leg: adjustment.balanceEffect < 0n ? (0 as const) : (1 as const),
      };
      return {
        kind: "adjustment" as const,
        reason: adjustment.change,
        chainId: adjustment.chainId,
        blockNumber: evidence.blockNumber,
        blockHash: evidence.blockHash as `0x${string}`,
        blockTimestamp: evidence.blockTimestamp,
        transactionHash: adjustment.transactionHash as `0x${string}`,
        logIndex: adjustment.logIndex,
        from: evidence.from as `0x${string}`,
        to: evidence.to as `0x${string}`,
        value: adjustment.value,
        paymentAddress: adjustment.paymentAddress as `0x${string}`,
        leg: evidence.leg,
        adjustment: {
          ordinal,
          periodId: adjustment.periodId,
          entryKind: adjustment.entryKind,
          balanceEffect: adjustment.balanceEffect,
        },
      };
    });
}

const after = (entry: Position, position: Position) =>
  entry.blockNumber !== position.blockNumber
    ? entry.blockNumber > position.blockNumber
    : entry.logIndex !== position.logIndex
      ? entry.logIndex > position.logIndex
      : entry.leg > position.leg;

/**
 * Up to `take` entries of the range after `position`, in (block, log index, leg)
 * order. A transfer may give two entries (between two watched addresses), so the
 * transfer at the position is read again and its legs up to the position dropped;
 * `take + 1` transfers then always give `take` entries when that many remain.
 */
async function entriesAfter(
  context: Pick<AppContext, "store" | "indexed">,
  params: {
    partnerId: string | undefined;
    range: ResolvedRange;
    addresses: ReadonlySet<string>;
    funders: ReadonlySet<string>;
    position: PagePosition | undefined;
    take: number;
  },
): Promise<BookEntry[]> {
  const { position } = params;
  if (position !== undefined && !("adjustment" in position)) return transferEntriesAfter(context, { ...params, position });
  const inView = (address: string) => params.addresses.has(address.toLowerCase()) || params.funders.has(address.toLowerCase());
  const adjustments = (await adjustmentEntries(context, { partnerId: params.partnerId, range: params.range, inView }))
    .filter((entry) => position === undefined || (entry.adjustment?.ordinal ?? -1) > position.adjustment)
    .slice(0, params.take);
  if (adjustments.length === params.take) return adjustments;
  return [
    ...adjustments,
    ...(await transferEntriesAfter(context, { ...params, position: undefined, take: params.take - adjustments.length })),
  ];
}

async function transferEntriesAfter(
  context: Pick<AppContext, "store" | "indexed">,
  params: {
    range: ResolvedRange;
    addresses: ReadonlySet<string>;
    funders: ReadonlySet<string>;
    position: Position | undefined;
    take: number;
  },
): Promise<BookEntry[]> {
  const { range, position } = params;
  if ((params.addresses.size === 0 && params.funders.size === 0) || range.fromBlock > range.toBlock) return [];
  // Two streams in chain order, each read `take + 1` deep past the position: the first
  // `take` of their merge are the first `take` of the books.
  const claims =
    params.funders.size === 0
      ? []
      : await context.indexed.rewardClaims({
          chainIds: [range.chainId],
          funders: [...params.funders] as `0x${string}`[],
          fromBlock: range.fromBlock,
          toBlock: range.toBlock,
          after: position === undefined ? undefined : { blockNumber: position.blockNumber, logIndex: position.logIndex },
          limit: params.take + 1,
        });
  const transfers =
    params.addresses.size === 0
      ? []
      : await context.indexed.transfers({
          chainIds: [range.chainId],
          involving: [...params.addresses] as `0x${string}`[],
          fromBlock: range.fromBlock,
          toBlock: range.toBlock,
          after:
            position === undefined
              ? undefined
              : { chainId: range.chainId, blockNumber: position.blockNumber, logIndex: position.logIndex - 1 },
          limit: params.take + 1,
        });
  const facts = await gatherLedgerFacts(context, transfers, params.addresses);
  const entries = [
    ...transfers.flatMap((transfer) => ledgerEntriesOf(transfer, facts(transfer), params.addresses)),
    ...(await fundingClaimEntries(context, claims)),
  ]
    .filter((entry) => position === undefined || after(entry, position))
    .sort(inChainOrder)
    .slice(0, params.take);
  const orders = await orderDetailsOf(
    context,
    entries.flatMap((entry) => (entry.orderId === undefined ? [] : [entry.orderId])),
  );
  return entries.map((entry) => ({ ...entry, ...(entry.orderId === undefined ? {} : orders.get(entry.orderId)) }));
}

const LedgerCursor = z.union([
  z.object({
    b: z
      .string()
      .regex(/^\d{1,19}$/)
      .refine((value) => BigInt(value) <= 2n ** 63n - 1n),
    l: z.number().int().min(0).max(2_147_483_647),
    g: z.union([z.literal(0), z.literal(1)]),
  }),
  z.object({ a: z.number().int().min(0).max(2_147_483_647) }),
]);

const positionOf = (entry: BookEntry): PagePosition =>
  entry.adjustment === undefined
    ? { blockNumber: entry.blockNumber, logIndex: entry.logIndex, leg: entry.leg }
    : { adjustment: entry.adjustment.ordinal };

/** `GET /v1/ledger`: one page of the range's entries, keyset-paged on (block, log index, leg). */
export async function ledgerPage(
  context: Pick<AppContext, "store" | "indexed">,
  params: { scope: BooksScope; range: ResolvedRange; cursor?: string; limit: number },
): Promise<Page<LedgerEntryView>> {
  const { addresses, funders } = await booksInView(context, params.scope, params.range.chainId);
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: LedgerCursor,
    keyOf: (entry: BookEntry) =>
      entry.adjustment === undefined
        ? { b: entry.blockNumber.toString(), l: entry.logIndex, g: entry.leg }
        : { a: entry.adjustment.ordinal },
    fetch: (key, take) =>
      entriesAfter(context, {
        partnerId: params.scope.partnerId,
        range: params.range,
        addresses,
        funders,
        position:
          key === undefined
            ? undefined
            : "a" in key
              ? { adjustment: key.a }
              : { blockNumber: BigInt(key.b), logIndex: key.l, leg: key.g },
        take,
      }),
    view: (entries) => entries.map(ledgerEntryView),
  });
}

/** Every entry of the range, a page at a time (exports and the reconciliation: nothing holds the whole range). */
export async function* ledgerPages(
  context: Pick<AppContext, "store" | "indexed">,
  params: {
    partnerId: string | undefined;
    range: ResolvedRange;
    addresses: ReadonlySet<string>;
    funders: ReadonlySet<string>;
    pageSize?: number;
  },
): AsyncGenerator<BookEntry[]> {
  const take = params.pageSize ?? 1000;
  let position: PagePosition | undefined;
  for (;;) {
    const entries = await entriesAfter(context, {
      partnerId: params.partnerId,
      range: params.range,
      addresses: params.addresses,
      funders: params.funders,
      position,
      take,
    });
    if (entries.length > 0) yield entries;
    if (entries.length < take) return;
    position = positionOf(entries.at(-1) as BookEntry);
  }
}
