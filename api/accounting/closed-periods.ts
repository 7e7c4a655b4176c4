import { createHash, randomUUID } from "node:crypto";
import type { AppContext } from "../app-context.js";
import { problem, problems } from "../http/problem.js";
import { csvLine, LEDGER_COLUMNS } from "./csv-export.js";
import { booksInView, ledgerPages } from "./ledger.js";
import { signedValue } from "./ledger-rules.js";
import {
  adjustmentsOfPeriods,
  type ClosedPeriod,
  findPartnerPeriod,
  insertPeriod,
  keepAdjustment,
  overlappingPeriod,
  type PeriodAdjustment,
  periodsOfPartner,
  takeClosingTurn,
} from "./period-record.js";
import { parseRange, type RangeQuery, type ResolvedRange, resolveRange } from "./range.js";
import { reconcile, reconciliationRowView } from "./reconciliation.js";
import { ledgerCsvCells } from "./reports.js";

/**
 * Closed periods (SPEC 17.1, docs/accounting.md "Closed periods"). An accountant closes
 * a range once it is final; the service keeps the ledger CSV it served at that moment
 * (its bytes and their SHA-256) and the reconciliation's figures, and serves them as
 * they were ever after. A later fact that touches the closed range (a reorg, a
 * late-indexed transfer) never rewrites it: it is found by comparing the range's
 * entries now with those kept, and reported as an adjustment, in the period that holds
 * the block where it was found (the next open one until that is closed).
 */

/**
 * An entry as kept at closing: [transactionHash, logIndex, paymentAddress, kind, value,
 * blockHash, leg, blockNumber, blockTimestamp, from, to]. The last four are the evidence an
 * adjustment row shows once the transfer is gone (a reorg); periods closed before they
 * were kept have the first seven only.
 */
export type KeptEntry =
  | [string, number, string, string, string, string, 0 | 1]
  | [string, number, string, string, string, string, 0 | 1, string, string, string, string];

const entryKey = (entry: KeptEntry) => `${entry[0].toLowerCase()}:${entry[1]}:${entry[2].toLowerCase()}:${entry[6]}`;

/** The ledger CSV of a range exactly as `GET /v1/ledger` streams it (header, then each page's rows), with its entries. */
async function ledgerSnapshot(context: AppContext, params: { partnerId: string; range: ResolvedRange }) {
  const { addresses, funders } = await booksInView(context, { partnerId: params.partnerId }, params.range.chainId);
  let text = csvLine(LEDGER_COLUMNS);
  const entries: KeptEntry[] = [];
  for await (const page of ledgerPages(context, { partnerId: params.partnerId, range: params.range, addresses, funders })) {
    text += page.map((entry) => csvLine(ledgerCsvCells(entry))).join("");
    // An adjustment row reports a fact of an earlier period: it is no entry of this range to compare later.
    for (const entry of page.filter((row) => row.adjustment === undefined))
      entries.push([
        entry.transactionHash.toLowerCase(),
        entry.logIndex,
        entry.paymentAddress.toLowerCase(),
        entry.kind,
        entry.value.toString(),
        entry.blockHash.toLowerCase(),
        entry.leg,
        entry.blockNumber.toString(),
        entry.blockTimestamp.toString(),
        entry.from.toLowerCase(),
        entry.to.toLowerCase(),
      ]);
  }
  return { text, entries };
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** `POST /v1/reports/periods`: closes a final range of the partner's books. */
export async function closePeriod(context: AppContext, params: { partnerId: string; query: RangeQuery; now?: number }) {
  const range = await resolveRange(context, parseRange(params.query));
  const head = (await context.indexed.heads()).get(range.chainId);
  if (head === undefined || range.toBlock < range.fromBlock)
    throw problem("period_not_final", "The period holds no indexed block yet.");
  if (params.query.to !== undefined && range.toTime > Number(head.blockTimestamp) * 1000)
    throw problem("period_not_final", "The period has not ended on the chain yet: close it once its last block is mined.");
  const confirmations = head.blockNumber - range.toBlock + 1n;
  if (confirmations < BigInt(range.network.confirmations))
    throw problem(
      "period_not_final",
      `Block ${range.toBlock} has ${confirmations} of the ${range.network.confirmations} confirmations this network needs.`,
    );
  const scope = { partnerId: params.partnerId, chainId: range.chainId, fromBlock: range.fromBlock, toBlock: range.toBlock };
  // Refused before the books are read; checked again under the closing turn below.
  await refuseOverlap(context, scope);
  // What earlier periods' facts changed is found first, so the rows this range reports are in its ledger as closed.
  for (const earlier of await periodsOfPartner(context.store, params.partnerId))
    if (earlier.chainId === range.chainId && earlier.toBlock < range.fromBlock) await detectAdjustments(context, earlier);
  const snapshot = await ledgerSnapshot(context, { partnerId: params.partnerId, range });
  const reconciliation = await reconcile(context, { scope: { partnerId: params.partnerId }, range });
  const period: ClosedPeriod = {
    id: `per_${randomUUID()}`,
    partnerId: params.partnerId,
    chainId: range.chainId,
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
    fromTime: range.fromTime,
    toTime: range.toTime,
    closedAt: params.now ?? Date.now(),
    digest: sha256(snapshot.text),
    ledgerCsv: snapshot.text,
    reconciliationJson: JSON.stringify({
      fromBlock: reconciliation.fromBlock.toString(),
      toBlock: reconciliation.toBlock.toString(),
      data: reconciliation.rows.map(reconciliationRowView),
    }),
    entriesJson: JSON.stringify(snapshot.entries),
  };
  await context.store.transaction().execute(async (trx) => {
    await takeClosingTurn(trx, { partnerId: params.partnerId, chainId: range.chainId });
    await refuseOverlap({ store: trx }, scope);
    await insertPeriod(trx, period);
  });
  return periodView(period, [], []);
}

async function refuseOverlap(
  context: Pick<AppContext, "store">,
  scope: { partnerId: string; chainId: number; fromBlock: bigint; toBlock: bigint },
) {
  const other = await overlappingPeriod(context.store, scope);
  if (other !== undefined)
    throw problem(
      "period_overlaps",
      `Blocks ${scope.fromBlock} to ${scope.toBlock} overlap period ${other.id} (blocks ${other.fromBlock} to ${other.toBlock}).`,
    );
}

/**
 * Compares the closed range's entries now with those kept at closing and keeps what
 * differs as adjustments (each found once: its first detection stays).
 */
export async function detectAdjustments(context: AppContext, period: ClosedPeriod, now = Date.now()): Promise<void> {
  const closed = (await periodsOfPartner(context.store, period.partnerId)).filter(
    (other) => other.chainId === period.chainId && other.id !== period.id,
  );
  const network = context.networks.find((candidate) => candidate.chainId === period.chainId);
  const head = (await context.indexed.heads()).get(period.chainId)?.blockNumber;
  if (network === undefined || head === undefined) return;
  const range: ResolvedRange = {
    network,
    chainId: period.chainId,
    fromBlock: period.fromBlock,
    toBlock: period.toBlock,
    fromTime: period.fromTime,
    toTime: period.toTime,
  };
  const kept = JSON.parse(period.entriesJson) as KeptEntry[];
  const { entries: current } = await ledgerSnapshot(context, { partnerId: period.partnerId, range });
  // Found now, reported in the period holding the block after the closed one at the earliest,
  // and never in one already closed (its ledger is filed without it): past any that holds the block.
  let detectedBlock = head > period.toBlock ? head : period.toBlock + 1n;
  for (let holder = closedHolding(closed, detectedBlock); holder !== undefined; holder = closedHolding(closed, detectedBlock))
    detectedBlock = holder.toBlock + 1n;
  const adjustment = (change: PeriodAdjustment["change"], entry: KeptEntry, effect: bigint): PeriodAdjustment => ({
    periodId: period.id,
    change,
    chainId: period.chainId,
    transactionHash: entry[0],
    logIndex: entry[1],
    paymentAddress: entry[2],
    entryKind: entry[3],
    value: BigInt(entry[4]),
    balanceEffect: effect,
    detectedAt: now,
    detectedBlock,
    ...(entry.length === 11
      ? {
          evidence: {
            blockNumber: BigInt(entry[7]),
            blockHash: entry[5],
            blockTimestamp: BigInt(entry[8]),
            from: entry[9],
            to: entry[10],
            leg: entry[6],
          },
        }
      : {}),
  });
  for (const { change, entry, effect } of entryChanges(kept, current))
    await keepAdjustment(context.store, adjustment(change, entry, effect));
}

const closedHolding = (periods: readonly ClosedPeriod[], block: bigint) =>
  periods.find((other) => other.fromBlock <= block && block <= other.toBlock);

/**
 * What differs between a closed range's entries as kept and as they are now (pure):
 * an entry only now is `added`, only then `removed` (with the opposite effect on the
 * balance), in another block `moved`, of another kind `reclassified` (no effect).
 */
export function entryChanges(
  kept: readonly KeptEntry[],
  current: readonly KeptEntry[],
): { change: PeriodAdjustment["change"]; entry: KeptEntry; effect: bigint }[] {
  const effectOf = (entry: KeptEntry) => signedValue({ leg: entry[6], value: BigInt(entry[4]) });
  const before = new Map(kept.map((entry) => [entryKey(entry), entry]));
  const now = new Set(current.map(entryKey));
  const changes: { change: PeriodAdjustment["change"]; entry: KeptEntry; effect: bigint }[] = [];
  for (const entry of current) {
    const was = before.get(entryKey(entry));
    if (was === undefined) changes.push({ change: "added", entry, effect: effectOf(entry) });
    else if (was[5] !== entry[5]) changes.push({ change: "moved", entry, effect: 0n });
    else if (was[3] !== entry[3]) changes.push({ change: "reclassified", entry, effect: 0n });
  }
  for (const entry of kept) if (!now.has(entryKey(entry))) changes.push({ change: "removed", entry, effect: -effectOf(entry) });
  return changes;
}

function adjustmentView(adjustment: PeriodAdjustment, periods: readonly ClosedPeriod[]) {
  const reportedIn = periods.find(
    (period) =>
      period.chainId === adjustment.chainId &&
      period.fromBlock <= adjustment.detectedBlock &&
      adjustment.detectedBlock <= period.toBlock,
  );
  return {
    kind: adjustment.change,
    periodId: adjustment.periodId,
    entryKind: adjustment.entryKind,
    transactionHash: adjustment.transactionHash,
    logIndex: adjustment.logIndex,
    paymentAddress: adjustment.paymentAddress,
    value: adjustment.value.toString(),
    balanceEffect: adjustment.balanceEffect.toString(),
    detectedAt: new Date(adjustment.detectedAt).toISOString(),
    detectedBlock: adjustment.detectedBlock.toString(),
    reportedInPeriod: reportedIn?.id ?? null,
  };
}

type AdjustmentView = ReturnType<typeof adjustmentView>;
/** The reconciliation's JSON answer, as kept at closing. */
type ReconciliationAnswer = { fromBlock: string; toBlock: string; data: ReturnType<typeof reconciliationRowView>[] };

function periodView(period: ClosedPeriod, adjustments: AdjustmentView[], reported: AdjustmentView[]) {
  return {
    id: period.id,
    chainId: period.chainId,
    fromBlock: period.fromBlock.toString(),
    toBlock: period.toBlock.toString(),
    from: new Date(period.fromTime).toISOString(),
    to: new Date(period.toTime).toISOString(),
    closedAt: new Date(period.closedAt).toISOString(),
    digest: period.digest,
    reconciliation: JSON.parse(period.reconciliationJson) as ReconciliationAnswer,
    adjustments,
    adjustmentsReported: reported,
  };
}

/** The partner's periods with what was found since each closed, and the adjustments of earlier periods each one holds. */
async function viewsOf(context: AppContext, partnerId: string, periods: readonly ClosedPeriod[]) {
  const all = await periodsOfPartner(context.store, partnerId);
  for (const period of all) await detectAdjustments(context, period);
  const adjustments = (
    await adjustmentsOfPeriods(
      context.store,
      all.map((period) => period.id),
    )
  ).map((adjustment) => adjustmentView(adjustment, all));
  return periods.map((period) =>
    periodView(
      period,
      adjustments.filter((adjustment) => adjustment.periodId === period.id),
      adjustments.filter((adjustment) => adjustment.reportedInPeriod === period.id),
    ),
  );
}

/** `GET /v1/reports/periods`. */
export async function listPeriods(context: AppContext, params: { partnerId: string }) {
  return { data: await viewsOf(context, params.partnerId, await periodsOfPartner(context.store, params.partnerId)) };
}

async function partnerPeriod(context: AppContext, params: { partnerId: string; periodId: string }) {
  const period = await findPartnerPeriod(context.store, params);
  if (period === undefined) throw problems.notFound(`Period ${params.periodId.slice(0, 100)}`);
  return period;
}

/** `GET /v1/reports/periods/:id`: the figures as closed, with the adjustments found since. */
export async function readPeriod(context: AppContext, params: { partnerId: string; periodId: string }) {
  const period = await partnerPeriod(context, params);
  return (await viewsOf(context, params.partnerId, [period]))[0];
}

/** `GET /v1/reports/periods/:id/ledger`: the ledger CSV's bytes as served at closing. */
export async function periodLedgerCsv(context: AppContext, params: { partnerId: string; periodId: string }) {
  return (await partnerPeriod(context, params)).ledgerCsv;
}
