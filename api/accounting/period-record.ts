import type { Kysely } from "kysely";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";

/**
 * The closed-period record (docs/accounting.md, "Closed periods"): every query of
 * `closed_period`, its guard `closed_period_guard` and `period_adjustment` lives here.
 * A closed period's row never changes once written.
 */
export type ClosedPeriod = {
  id: string;
  partnerId: string;
  chainId: number;
  fromBlock: bigint;
  toBlock: bigint;
  fromTime: number;
  toTime: number;
  closedAt: number;
  digest: string;
  ledgerCsv: string;
  reconciliationJson: string;
  entriesJson: string;
};

export type PeriodAdjustment = {
  periodId: string;
  change: "added" | "removed" | "moved" | "reclassified";
  chainId: number;
  transactionHash: string;
  logIndex: number;
  paymentAddress: string;
  entryKind: string;
  value: bigint;
  balanceEffect: bigint;
  detectedAt: number;
  detectedBlock: bigint;
  /** The transfer's block, addresses and leg; absent on adjustments found before migration 0022 kept them. */
  evidence?: AdjustmentEvidence;
};

export type AdjustmentEvidence = {
  blockNumber: bigint;
  blockHash: string;
  blockTimestamp: bigint;
  from: string;
  to: string;
  leg: 0 | 1;
};

type PeriodRow = Database["closed_period"];
type AdjustmentRow = Database["period_adjustment"];

function toAdjustment(row: AdjustmentRow): PeriodAdjustment {
  const evidence: AdjustmentEvidence | undefined =
    row.block_number === null ||
    row.block_hash === null ||
    row.block_time === null ||
    row.from_address === null ||
    row.to_address === null ||
    row.leg === null
      ? undefined
      : {
          blockNumber: BigInt(row.block_number),
          blockHash: row.block_hash,
          blockTimestamp: BigInt(row.block_time),
          from: row.from_address,
          to: row.to_address,
          leg: Number(row.leg) === 1 ? 1 : 0,
        };
  return {
    periodId: row.period_id,
    change: row.change as PeriodAdjustment["change"],
    chainId: Number(row.chain_id),
    transactionHash: row.transaction_hash,
    logIndex: Number(row.log_index),
    paymentAddress: row.payment_address,
    entryKind: row.entry_kind,
    value: BigInt(row.value),
    balanceEffect: BigInt(row.balance_effect),
    detectedAt: Number(row.detected_at),
    detectedBlock: BigInt(row.detected_block),
    ...(evidence === undefined ? {} : { evidence }),
  };
}

function toPeriod(row: PeriodRow): ClosedPeriod {
  return {
    id: row.id,
    partnerId: row.partner_id,
    chainId: Number(row.chain_id),
    fromBlock: BigInt(row.from_block),
    toBlock: BigInt(row.to_block),
    fromTime: Number(row.from_time),
    toTime: Number(row.to_time),
    closedAt: Number(row.closed_at),
    digest: row.digest,
    ledgerCsv: row.ledger_csv,
    reconciliationJson: row.reconciliation_json,
    entriesJson: row.entries_json,
  };
}

/**
 * Takes the partner's closing turn on a chain: an UPDATE of its guard row, which a
 * concurrent closing waits on (Postgres) or which the store's single writer orders
 * (SQLite), so the overlap check that follows sees every period committed before.
 */
export async function takeClosingTurn(trx: Kysely<Database>, params: { partnerId: string; chainId: number }): Promise<void> {
  assertInTransaction(trx, "closed period");
  await trx
    .insertInto("closed_period_guard")
    .values({ partner_id: params.partnerId, chain_id: params.chainId, closings: 1 })
    .onConflict((oc) =>
      oc.columns(["partner_id", "chain_id"]).doUpdateSet((eb) => ({ closings: eb("closed_period_guard.closings", "+", 1) })),
    )
    .execute();
}

/** A period of the partner on the chain sharing a block with [fromBlock, toBlock], if any. */
export async function overlappingPeriod(
  db: Kysely<Database>,
  params: { partnerId: string; chainId: number; fromBlock: bigint; toBlock: bigint },
): Promise<ClosedPeriod | undefined> {
  const row = await db
    .selectFrom("closed_period")
    .selectAll()
    .where("partner_id", "=", params.partnerId)
    .where("chain_id", "=", params.chainId)
    .where("from_block", "<=", Number(params.toBlock))
    .where("to_block", ">=", Number(params.fromBlock))
    .executeTakeFirst();
  return row === undefined ? undefined : toPeriod(row);
}

export async function insertPeriod(trx: Kysely<Database>, period: ClosedPeriod): Promise<void> {
  assertInTransaction(trx, "closed period");
  await trx
    .insertInto("closed_period")
    .values({
      id: period.id,
      partner_id: period.partnerId,
      chain_id: period.chainId,
      from_block: Number(period.fromBlock),
      to_block: Number(period.toBlock),
      from_time: period.fromTime,
      to_time: period.toTime,
      closed_at: period.closedAt,
      digest: period.digest,
      ledger_csv: period.ledgerCsv,
      reconciliation_json: period.reconciliationJson,
      entries_json: period.entriesJson,
    })
    .execute();
}

/** The partner's period; another partner's is as missing as one that does not exist. */
export async function findPartnerPeriod(
  db: Kysely<Database>,
  params: { partnerId: string; periodId: string },
): Promise<ClosedPeriod | undefined> {
  const row = await db
    .selectFrom("closed_period")
    .selectAll()
    .where("id", "=", params.periodId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  return row === undefined ? undefined : toPeriod(row);
}

/** The partner's periods, oldest range first. */
export async function periodsOfPartner(db: Kysely<Database>, partnerId: string): Promise<ClosedPeriod[]> {
  const rows = await db
    .selectFrom("closed_period")
    .selectAll()
    .where("partner_id", "=", partnerId)
    .orderBy("chain_id")
    .orderBy("from_block")
    .execute();
  return rows.map(toPeriod);
}

/** Keeps an adjustment found for a period; one found before (same fact, same change) keeps its first detection. */
export async function keepAdjustment(db: Kysely<Database>, adjustment: PeriodAdjustment): Promise<void> {
  await db
    .insertInto("period_adjustment")
    .values({
      period_id: adjustment.periodId,
      change: adjustment.change,
      chain_id: adjustment.chainId,
      transaction_hash: adjustment.transactionHash.toLowerCase(),
      log_index: adjustment.logIndex,
      payment_address: adjustment.paymentAddress.toLowerCase(),
      entry_kind: adjustment.entryKind,
      value: adjustment.value.toString(),
      balance_effect: adjustment.balanceEffect.toString(),
      detected_at: adjustment.detectedAt,
      detected_block: Number(adjustment.detectedBlock),
      block_number: adjustment.evidence === undefined ? null : Number(adjustment.evidence.blockNumber),
      block_hash: adjustment.evidence?.blockHash.toLowerCase() ?? null,
      block_time: adjustment.evidence === undefined ? null : Number(adjustment.evidence.blockTimestamp),
      from_address: adjustment.evidence?.from.toLowerCase() ?? null,
      to_address: adjustment.evidence?.to.toLowerCase() ?? null,
      leg: adjustment.evidence?.leg ?? null,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Adjustments of these periods (by period), in the order they were found. */
export async function adjustmentsOfPeriods(db: Kysely<Database>, periodIds: readonly string[]): Promise<PeriodAdjustment[]> {
  if (periodIds.length === 0) return [];
  const rows = await db
    .selectFrom("period_adjustment")
    .selectAll()
    .where("period_id", "in", [...periodIds])
    .orderBy("detected_at")
    .orderBy("transaction_hash")
    .orderBy("log_index")
    .execute();
  return rows.map(toAdjustment);
}

/** Every closed period of every partner, oldest first (the adjustment worker's pass). */
export async function allPeriods(db: Kysely<Database>): Promise<ClosedPeriod[]> {
  const rows = await db.selectFrom("closed_period").selectAll().orderBy("closed_at").orderBy("id").execute();
  return rows.map(toPeriod);
}

/**
 * The adjustments a range of the books reports (SPEC 17.1): found at a block of the
 * range, of a period closed before the range starts (a range that holds the closed
 * period holds the fact itself). Oldest fact first, then as found. `partnerId`
 * undefined: every partner's (an auditor's books).
 */
export async function adjustmentsReportedIn(
  db: Kysely<Database>,
  params: { partnerId: string | undefined; chainId: number; fromBlock: bigint; toBlock: bigint },
): Promise<(PeriodAdjustment & { partnerId: string })[]> {
  let query = db
    .selectFrom("period_adjustment")
    .innerJoin("closed_period", "closed_period.id", "period_adjustment.period_id")
    .selectAll("period_adjustment")
    .select("closed_period.partner_id")
    .where("period_adjustment.chain_id", "=", params.chainId)
    .where("closed_period.to_block", "<", Number(params.fromBlock))
    .where("period_adjustment.detected_block", ">=", Number(params.fromBlock))
    .where("period_adjustment.detected_block", "<=", Number(params.toBlock));
  if (params.partnerId !== undefined) query = query.where("closed_period.partner_id", "=", params.partnerId);
  const rows = await query
    .orderBy("closed_period.from_block")
    .orderBy("period_adjustment.detected_at")
    .orderBy("period_adjustment.transaction_hash")
    .orderBy("period_adjustment.log_index")
    .orderBy("period_adjustment.payment_address")
    .orderBy("period_adjustment.change")
    .execute();
  return rows.map((row) => ({ ...toAdjustment(row), partnerId: row.partner_id }));
}
