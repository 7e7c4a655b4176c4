import type { Hex } from "viem";
import type { AppContext } from "../app-context.js";
import type { IndexedRewardClaim, IndexedTransfer } from "../indexed/indexed-chain.js";
import { readAllPages, readByTransactions } from "../indexed/whole-reads.js";
import { paymentTransactionsOf } from "../payments/payment-record.js";
import { matchedOutgoingTransactions } from "../refunds/outgoing-transfer-record.js";
import { fundingClaimEntries } from "./ledger.js";
import { gatherLedgerFacts } from "./ledger-facts.js";
import { emptySums, ledgerEntriesOf, PAYMENTS_OF_OWN_KIND, type SumKind, signedValue } from "./ledger-rules.js";
import type { ResolvedRange } from "./range.js";

type Context = Pick<AppContext, "store" | "indexed">;

/** Per payment address (lower case): the sums per kind of the range's ledger entries, and its net movement. */
export type RangeSums = Map<string, { sums: Record<SumKind, bigint>; moved: bigint }>;

/**
 * How far outside the range a payment or refund record's block is still looked at: a
 * re-mined transfer's record follows the index within a worker pass (the reorg watches),
 * and the index itself decides what is in the range.
 */
const RECORD_BLOCK_SLACK = 256n;
/** Transfers classified together: one gathering of facts, as one page of the ledger. */
const CLASSIFY_BATCH = 1_000;

/**
 * The sums per kind of a range's ledger entries (the ledger's own rules,
 * ledger-rules.ts), without reading every transfer: a transfer the service made
 * nothing of is `unmatched_in` or `unmatched_out` whatever else it is. So only the
 * transactions holding a payment of a kind of its own, a refund's transfer or a
 * reward claim are read and classified one by one; the rest of each address's money
 * in and out, summed in the index's SQL, goes to the two unmatched kinds. The result
 * equals summing `GET /v1/ledger` over the range (test/accounting.test.ts checks it).
 */
export async function rangeSums(
  context: Context,
  params: { range: ResolvedRange; addresses: readonly string[] },
): Promise<RangeSums> {
  const { range } = params;
  const addresses = params.addresses.map((address) => address.toLowerCase() as `0x${string}`);
  const inView = new Set<string>(addresses);
  const result: RangeSums = new Map(
    addresses.map((address): [string, { sums: Record<SumKind, bigint>; moved: bigint }] => [
      address,
      { sums: emptySums(), moved: 0n },
    ]),
  );
  if (addresses.length === 0 || range.fromBlock > range.toBlock) return result;

  const totals = await context.indexed.transferTotals({
    chainId: range.chainId,
    addresses,
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
  });
  const transactions = await transactionsOfOwnKind(context, { range, addresses });
  const transfers = await transfersOf(context, { range, addresses, transactionHashes: [...transactions] as Hex[] });
  const classified = new Map<string, { in: bigint; out: bigint }>(addresses.map((address) => [address, { in: 0n, out: 0n }]));
  for (let start = 0; start < transfers.length; start += CLASSIFY_BATCH) {
    const batch = transfers.slice(start, start + CLASSIFY_BATCH);
    const facts = await gatherLedgerFacts(context, batch, inView);
    for (const transfer of batch) {
      for (const entry of ledgerEntriesOf(transfer, facts(transfer), inView)) {
        const address = entry.paymentAddress.toLowerCase();
        const own = result.get(address);
        const seen = classified.get(address);
        if (own === undefined || seen === undefined || entry.kind === "zero_value") continue;
        own.sums[entry.kind] += entry.value;
        if (entry.leg === 1) seen.in += entry.value;
        else seen.out += entry.value;
      }
    }
  }
  for (const [address, own] of result) {
    const moved = totals.get(address) ?? { received: 0n, sent: 0n };
    const seen = classified.get(address) ?? { in: 0n, out: 0n };
    own.sums.unmatched_in += moved.received - seen.in;
    own.sums.unmatched_out += moved.sent - seen.out;
    own.moved = moved.received - moved.sent;
  }
  return result;
}

/** The transactions (lower case) that may hold an entry of a kind other than the two unmatched ones. */
async function transactionsOfOwnKind(
  context: Context,
  params: { range: ResolvedRange; addresses: readonly `0x${string}`[] },
): Promise<Set<string>> {
  const { range, addresses } = params;
  const around = {
    chainId: range.chainId,
    fromBlock: range.fromBlock > RECORD_BLOCK_SLACK ? range.fromBlock - RECORD_BLOCK_SLACK : 0n,
    toBlock: range.toBlock + RECORD_BLOCK_SLACK,
  };
  const found = await paymentTransactionsOf(context.store, { ...around, recipients: addresses, kinds: PAYMENTS_OF_OWN_KIND });
  for (const hash of await matchedOutgoingTransactions(context.store, { ...around, senders: addresses })) found.add(hash);
  const claims = await readAllPages<IndexedRewardClaim>(({ after, limit }) =>
    context.indexed.rewardClaims({
      chainIds: [range.chainId],
      funders: [...addresses],
      fromBlock: range.fromBlock,
      toBlock: range.toBlock,
      after,
      limit,
    }),
  );
  for (const claim of claims) found.add(claim.transactionHash.toLowerCase());
  return found;
}

/** The range's transfers of these transactions that involve the addresses, in chain order. */
async function transfersOf(
  context: Context,
  params: { range: ResolvedRange; addresses: readonly `0x${string}`[]; transactionHashes: readonly Hex[] },
): Promise<IndexedTransfer[]> {
  const { range } = params;
  const transfers = await readByTransactions<IndexedTransfer>(params.transactionHashes, ({ transactionHashes, after, limit }) =>
    context.indexed.transfers({
      chainIds: [range.chainId],
      transactionHashes,
      involving: [...params.addresses],
      fromBlock: range.fromBlock,
      toBlock: range.toBlock,
      after,
      limit,
    }),
  );
  return transfers.sort((a, b) =>
    a.blockNumber !== b.blockNumber ? (a.blockNumber < b.blockNumber ? -1 : 1) : a.logIndex - b.logIndex,
  );
}

/**
 * The sums per kind of the range's entries of funding-only addresses (not payment
 * addresses): their reward claims, all read (a claim is one log; there are as many as
 * vouchers paid), classified by the ledger's own rule.
 */
export async function fundingSums(
  context: Context,
  params: { range: ResolvedRange; funders: readonly string[] },
): Promise<RangeSums> {
  const { range } = params;
  const result: RangeSums = new Map(
    params.funders.map((address): [string, { sums: Record<SumKind, bigint>; moved: bigint }] => [
      address.toLowerCase(),
      { sums: emptySums(), moved: 0n },
    ]),
  );
  if (params.funders.length === 0 || range.fromBlock > range.toBlock) return result;
  const claims = await readAllPages<IndexedRewardClaim>(({ after, limit }) =>
    context.indexed.rewardClaims({
      chainIds: [range.chainId],
      funders: params.funders as `0x${string}`[],
      fromBlock: range.fromBlock,
      toBlock: range.toBlock,
      after,
      limit,
    }),
  );
  for (const entry of await fundingClaimEntries(context, claims)) {
    const own = result.get(entry.paymentAddress.toLowerCase());
    if (own === undefined || entry.kind === "zero_value") continue;
    own.sums[entry.kind] += entry.value;
    own.moved += signedValue(entry);
  }
  return result;
}
