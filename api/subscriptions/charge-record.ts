import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { Hex } from "viem";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { ChargeFailureReason, SubscriptionChargeStatus, SubscriptionChargeTable } from "../store/subscription-tables.js";
import { type InputOf, planMove, type TransitionTable } from "../store/transition-table.js";

/**
 * The charge record: the only module that reads or writes `subscription_charge`. One
 * charge per (subscription, period index), as the manager charges each period at most
 * once. Rows become `SubscriptionCharge` in `toCharge`; every status change is one of
 * `chargeTransitions`, applied by `moveCharge` with one guarded UPDATE inside the
 * caller's transaction.
 */
export type SubscriptionCharge = {
  id: string;
  subscriptionId: string;
  partnerId: string;
  periodIndex: bigint;
  amount: bigint;
  status: SubscriptionChargeStatus;
  dueAt: number;
  attempts: number;
  failureReason: ChargeFailureReason | null;
  nextRetryAt: number | null;
  orderId: string | null;
  transactionHash: Hex | null;
  logIndex: number | null;
  blockNumber: bigint | null;
  paidAt: number | null;
  createdAt: number;
  updatedAt: number;
};

type ChargeRead = Pick<SubscriptionCharge, "attempts" | "status" | "nextRetryAt">;

export const chargeTransitions = {
  /** `charge(id)` was sent through the relayer (balance and allowance read first). */
  submit: {
    from: ["due"],
    to: "pending",
    guard: "attempts grows by one",
    set: (facts: { transactionHash: Hex }, charge: ChargeRead) => ({
      transaction_hash: facts.transactionHash.toLowerCase(),
      attempts: charge.attempts + 1,
      failure_reason: null,
      next_retry_at: null,
    }),
  },
  /** Its `Charged` log and its USDC `Transfer` to the payee have the network's confirmations; its order is created in the same transaction. */
  pay: {
    from: ["due", "pending"],
    to: "paid",
    set: (
      facts: { orderId: string; transactionHash: Hex; logIndex: number; blockNumber: bigint },
      _charge: unknown,
      now: number,
    ) => ({
      order_id: facts.orderId,
      transaction_hash: facts.transactionHash.toLowerCase(),
      log_index: facts.logIndex,
      block_number: Number(facts.blockNumber),
      failure_reason: null,
      next_retry_at: null,
      paid_at: now,
    }),
  },
  /** The checks before sending refused it (an attempt too), or the transaction reverted; `next_retry_at` is null after the last retry. */
  fail: {
    from: ["due", "pending"],
    to: "failed",
    guard: "attempts grows by one when refused before sending",
    set: (facts: { failureReason: ChargeFailureReason; nextRetryAt: number | null }, charge: ChargeRead) => ({
      failure_reason: facts.failureReason,
      next_retry_at: facts.nextRetryAt,
      // From `due` nothing was sent, so `submit` did not count it: the retry schedule counts every attempt.
      ...(charge.status === "due" ? { attempts: charge.attempts + 1 } : {}),
    }),
  },
  /** Its retry time came (`next_retry_at` has passed). */
  retry: {
    from: ["failed"],
    to: "due",
    guard: "next_retry_at has passed",
    refuse: (_facts: unknown, charge: ChargeRead, now: number) =>
      charge.nextRetryAt === null || now < charge.nextRetryAt ? "its retry time has not come" : undefined,
  },
  /** Its transaction was dropped, or its unconfirmed `Charged` left the index (a reorg): due again. */
  reopen: { from: ["pending"], to: "due", set: () => ({ transaction_hash: null }) },
} as const satisfies TransitionTable<SubscriptionChargeStatus, string, SubscriptionChargeTable>;

export type ChargeTransition = keyof typeof chargeTransitions;

export function toCharge(row: SubscriptionChargeTable): SubscriptionCharge {
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    partnerId: row.partner_id,
    periodIndex: BigInt(row.period_index),
    amount: BigInt(row.amount),
    status: row.status,
    dueAt: Number(row.due_at),
    attempts: Number(row.attempts),
    failureReason: row.failure_reason,
    nextRetryAt: row.next_retry_at === null ? null : Number(row.next_retry_at),
    orderId: row.order_id,
    transactionHash: row.transaction_hash as Hex | null,
    logIndex: row.log_index === null ? null : Number(row.log_index),
    blockNumber: row.block_number === null ? null : BigInt(row.block_number),
    paidAt: row.paid_at === null ? null : Number(row.paid_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export function newChargeId(): string {
  return `sch_${randomBytes(12).toString("hex")}`;
}

/**
 * The period's charge, `due`: created once per (subscription, period index), so workers in
 * several processes that find the same period due all answer the one charge.
 */
export async function ensureCharge(
  trx: Kysely<Database>,
  params: { subscriptionId: string; partnerId: string; periodIndex: bigint; amount: bigint; dueAt: number; now: number },
): Promise<{ charge: SubscriptionCharge; created: boolean }> {
  assertInTransaction(trx, "subscription charge");
  const result = await trx
    .insertInto("subscription_charge")
    .values({
      id: newChargeId(),
      subscription_id: params.subscriptionId,
      partner_id: params.partnerId,
      period_index: Number(params.periodIndex),
      amount: params.amount.toString(),
      status: "due",
      due_at: params.dueAt,
      attempts: 0,
      failure_reason: null,
      next_retry_at: null,
      order_id: null,
      transaction_hash: null,
      log_index: null,
      block_number: null,
      paid_at: null,
      created_at: params.now,
      updated_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  const row = await trx
    .selectFrom("subscription_charge")
    .selectAll()
    .where("subscription_id", "=", params.subscriptionId)
    .where("period_index", "=", Number(params.periodIndex))
    .executeTakeFirstOrThrow();
  return { charge: toCharge(row), created: result.numInsertedOrUpdatedRows === 1n };
}

export async function findCharge(db: Kysely<Database>, id: string): Promise<SubscriptionCharge | undefined> {
  const row = await db.selectFrom("subscription_charge").selectAll().where("id", "=", id).executeTakeFirst();
  return row === undefined ? undefined : toCharge(row);
}

/** A subscription's charges, oldest period first. */
export async function chargesOfSubscription(db: Kysely<Database>, subscriptionId: string): Promise<SubscriptionCharge[]> {
  const rows = await db
    .selectFrom("subscription_charge")
    .selectAll()
    .where("subscription_id", "=", subscriptionId)
    .orderBy("period_index")
    .execute();
  return rows.map(toCharge);
}

/**
 * Applies one transition to the charge as it was read, inside the caller's transaction. A
 * transition the table does not list from the read status throws `TransitionRefused`; a
 * retry before its time, or a concurrent change, answers false and changes nothing.
 */
export async function moveCharge<name extends ChargeTransition>(
  trx: Kysely<Database>,
  params: {
    charge: Pick<SubscriptionCharge, "id" | "status" | "attempts" | "nextRetryAt">;
    transition: name;
    facts: InputOf<(typeof chargeTransitions)[name]>;
    now: number;
  },
): Promise<boolean> {
  assertInTransaction(trx, "subscription charge");
  const { charge } = params;
  const move = planMove<SubscriptionChargeStatus, ChargeTransition, SubscriptionChargeTable>(
    "subscription charge",
    chargeTransitions,
    params.transition,
    { current: charge.status, input: params.facts, subject: charge, now: params.now },
  );
  if (move.refused !== undefined) return false;
  const updated = await trx
    .updateTable("subscription_charge")
    .set({ ...move.set, status: move.to, updated_at: params.now })
    .where("id", "=", charge.id)
    .where("status", "=", charge.status)
    // Another worker's attempt meanwhile changed what this one read.
    .where("attempts", "=", charge.attempts)
    .executeTakeFirst();
  return updated.numUpdatedRows === 1n;
}

/** The charges of these subscriptions that are not settled yet (`due`, `pending`, `failed`). */
export async function openChargesOf(db: Kysely<Database>, subscriptionIds: readonly string[]): Promise<SubscriptionCharge[]> {
  if (subscriptionIds.length === 0) return [];
  const rows = await db
    .selectFrom("subscription_charge")
    .selectAll()
    .where("subscription_id", "in", [...subscriptionIds])
    .where("status", "in", ["due", "pending", "failed"])
    .orderBy("period_index")
    .execute();
  return rows.map(toCharge);
}
