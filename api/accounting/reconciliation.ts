import type { AppContext } from "../app-context.js";
import type { NetworkConfig } from "../config/networks.js";
import { paymentAddressesOnChain } from "../partners/payment-addresses.js";
import { checksum } from "../values/checksum-address.js";
import { chainBalancesAt } from "./chain-balances.js";
import { adjustmentEntries, type BooksScope, booksInView } from "./ledger.js";
import { emptySums, SUM_KINDS, type SumKind } from "./ledger-rules.js";
import { keepOpeningBalance, openingBalancesOf } from "./opening-balances.js";
import type { ResolvedRange } from "./range.js";
import { fundingSums, rangeSums } from "./range-sums.js";
import { keepReconciliationCheck } from "./reconciliation-checks.js";

type Context = Pick<AppContext, "store" | "indexed" | "rpc">;

/**
 * Each address's balance at the end of the block before the indexer's start block:
 * kept in the store, read from the chain the first time an address is needed.
 */
export async function baselineBalances(
  context: Context,
  params: { network: NetworkConfig; addresses: readonly string[] },
): Promise<Map<string, bigint>> {
  const { network } = params;
  const kept = await openingBalancesOf(context.store, { chainId: network.chainId, addresses: params.addresses });
  const missing = params.addresses.filter((address) => !kept.has(address));
  if (missing.length > 0) {
    // Before block 0 nothing was held; otherwise the end of the block before the start.
    const block = network.startBlock > 0 ? BigInt(network.startBlock - 1) : undefined;
    const read =
      block === undefined
        ? new Map(missing.map((address) => [address, 0n]))
        : await chainBalancesAt(context, { network, addresses: missing, blockNumber: block });
    for (const address of missing) {
      await keepOpeningBalance(context.store, {
        chainId: network.chainId,
        address,
        tokenAddress: network.usdc,
        blockNumber: block ?? -1n,
        balance: read.get(address) ?? 0n,
        readAt: Date.now(),
      });
    }
    // Read back what is kept: a concurrent first read may have won, and both read the same block.
    for (const [address, balance] of await openingBalancesOf(context.store, { chainId: network.chainId, addresses: missing }))
      kept.set(address, balance);
  }
  return new Map(params.addresses.map((address) => [address, kept.get(address)?.balance ?? 0n]));
}

/** Each address's balance at the end of `blockNumber` as the index tells it: the baseline plus what came in, less what went out. */
export async function indexedBalancesAt(
  context: Context,
  params: { network: NetworkConfig; addresses: readonly string[]; blockNumber: bigint },
): Promise<Map<string, bigint>> {
  const baseline = await baselineBalances(context, params);
  const totals = await context.indexed.transferTotals({
    chainId: params.network.chainId,
    addresses: params.addresses as `0x${string}`[],
    fromBlock: BigInt(params.network.startBlock),
    toBlock: params.blockNumber,
  });
  return new Map(
    params.addresses.map((address) => {
      const moved = totals.get(address) ?? { received: 0n, sent: 0n };
      return [address, (baseline.get(address) ?? 0n) + moved.received - moved.sent];
    }),
  );
}

export type ReconciliationRow = {
  chainId: number;
  partnerId: string;
  paymentAddress: string;
  role: "payment_address" | "funding_address";
  openingBalance: bigint;
  closingBalance: bigint;
  chainBalance: bigint;
  difference: bigint;
  reconciled: boolean;
  sums: Record<SumKind, bigint>;
};

/**
 * `GET /v1/reports/reconciliation` (docs/accounting.md): per payment address, the
 * opening balance before the range's first block and the closing balance after its
 * last, computed from the index; the sums per kind of the range's entries (range-sums.ts); the
 * chain's balance at the closing block; reconciled when they agree to the base unit.
 */
export async function reconcile(
  context: Context,
  params: { scope: BooksScope; range: ResolvedRange },
): Promise<{ fromBlock: bigint; toBlock: bigint; rows: ReconciliationRow[] }> {
  const { range } = params;
  const view = await booksInView(context, params.scope, range.chainId);
  const addresses = [...view.addresses];
  const funders = [...view.funders];
  const opening = await indexedBalancesAt(context, { network: range.network, addresses, blockNumber: range.fromBlock - 1n });
  // A funding-only address is not watched by the index (only its claims are): its
  // opening balance is the chain's, and what else moved through it is its difference.
  const fundersOpening =
    funders.length === 0
      ? new Map<string, bigint>()
      : range.fromBlock === 0n
        ? new Map(funders.map((address) => [address, 0n]))
        : await chainBalancesAt(context, { network: range.network, addresses: funders, blockNumber: range.fromBlock - 1n });
  for (const [address, balance] of fundersOpening) opening.set(address, balance);
  const sums = await rangeSums(context, { range, addresses });
  for (const [address, own] of await fundingSums(context, { range, funders })) sums.set(address, own);
  const chain = await chainBalancesAt(context, {
    network: range.network,
    addresses: [...addresses, ...funders],
    blockNumber: range.toBlock,
  });
  // The adjustments this range reports (earlier closed periods' later facts) are in the
  // index's opening balance already: the opening is the balance as those closed books
  // left it, and `sums.adjustment` carries the difference, so the closing is unchanged.
  const adjusted = new Map<string, bigint>();
  for (const entry of await adjustmentEntries(context, {
    partnerId: params.scope.partnerId,
    range,
    inView: (address) => view.addresses.has(address) || view.funders.has(address),
  })) {
    const address = entry.paymentAddress.toLowerCase();
    adjusted.set(address, (adjusted.get(address) ?? 0n) + (entry.adjustment?.balanceEffect ?? 0n));
  }
  const rows = view.owners.map(({ address, partnerId, role }) => {
    const adjustment = adjusted.get(address) ?? 0n;
    const openingBalance = (opening.get(address) ?? 0n) - adjustment;
    const closingBalance = openingBalance + adjustment + (sums.get(address)?.moved ?? 0n);
    const chainBalance = chain.get(address) ?? 0n;
    return {
      chainId: range.chainId,
      partnerId,
      paymentAddress: address,
      role,
      openingBalance,
      closingBalance,
      chainBalance,
      difference: chainBalance - closingBalance,
      reconciled: chainBalance === closingBalance,
      sums: { ...(sums.get(address)?.sums ?? emptySums()), adjustment },
    };
  });
  return { fromBlock: range.fromBlock, toBlock: range.toBlock, rows };
}

export function reconciliationRowView(row: ReconciliationRow) {
  return {
    chainId: row.chainId,
    partnerId: row.partnerId,
    paymentAddress: checksum(row.paymentAddress),
    role: row.role,
    openingBalance: row.openingBalance.toString(),
    closingBalance: row.closingBalance.toString(),
    chainBalance: row.chainBalance.toString(),
    difference: row.difference.toString(),
    reconciled: row.reconciled,
    sums: Object.fromEntries(SUM_KINDS.map((kind) => [kind, row.sums[kind].toString()])) as Record<SumKind, string>,
  };
}

/**
 * The periodic check behind health and the console: every payment address of every
 * network, the index's balance against the chain's at the indexed head (two sums in
 * the index's SQL and one `balanceOf` per address), kept per address.
 */
export async function checkAllAddresses(context: Context & Pick<AppContext, "networks">): Promise<void> {
  const heads = await context.indexed.heads();
  for (const network of context.networks) {
    const head = heads.get(network.chainId)?.blockNumber;
    if (head === undefined) continue;
    const owners = await paymentAddressesOnChain(context.store, { chainId: network.chainId });
    if (owners.length === 0) continue;
    const addresses = owners.map((row) => row.address);
    const [computed, chain] = await Promise.all([
      indexedBalancesAt(context, { network, addresses, blockNumber: head }),
      chainBalancesAt(context, { network, addresses, blockNumber: head }),
    ]);
    const now = Date.now();
    for (const { address, partnerId } of owners) {
      const computedBalance = computed.get(address) ?? 0n;
      const chainBalance = chain.get(address) ?? 0n;
      await keepReconciliationCheck(context.store, {
        chainId: network.chainId,
        address,
        partnerId,
        blockNumber: head,
        computedBalance,
        chainBalance,
        difference: chainBalance - computedBalance,
        reconciled: computedBalance === chainBalance,
        checkedAt: now,
      });
    }
  }
}
