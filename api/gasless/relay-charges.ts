import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { RelayLimits } from "../config/option-types.js";
import { ProblemError } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { RelayerChargeTable, RelayPurpose } from "../store/relay-limit-tables.js";

/**
 * The relayer's limits (issue 24, docs/gasless.md "Limits"): the relayer's ETH is
 * shared by every partner, so what one partner (or one anonymous customer of it) can
 * make it spend is bounded. Every relayed transaction is recorded here as a charge
 * to a partner, one row per transaction, written only by this module.
 */

/** Who a relayed transaction is charged to, and what for. */
export type RelayCharge = {
  partnerId: string;
  chainId: number;
  purpose: RelayPurpose;
  /** What the call is for; the per-session quota counts charges of one subject (a checkout session's id for payments). */
  subjectId: string | null;
};

const DAY_MS = 24 * 3600 * 1000;
const utcDay = (now: number) => new Date(now).toISOString().slice(0, 10);
/** Seconds until the next UTC day, when the partner's quota and budget start again. */
const secondsToNextDay = (now: number) => Math.max(1, Math.ceil((DAY_MS - (now % DAY_MS)) / 1000));

/** A refusal of the relayer's limits; a problem's `retryAfterSeconds` extension goes out as `Retry-After` too. */
function refused(init: ConstructorParameters<typeof ProblemError>[0], retryAfterSeconds?: number): ProblemError {
  return new ProblemError(
    retryAfterSeconds === undefined ? init : { ...init, extensions: { ...init.extensions, retryAfterSeconds } },
  );
}

/** Whether an error is a refusal of the relayer's limits (the caller frees what it reserved and answers it as is). */
export const isRelayLimitRefusal = (error: unknown): error is ProblemError =>
  error instanceof ProblemError && (RELAY_LIMIT_CODES as readonly string[]).includes(error.code);

const RELAY_LIMIT_CODES = [
  "relay_amount_too_small",
  "relay_session_limit",
  "relay_quota_exceeded",
  "relay_budget_spent",
] as const;

/** `amount` must be at least the relayer's minimum; a smaller relayed payment costs more gas than it moves. */
export function assertRelayedAmount(limits: RelayLimits, amount: bigint): void {
  if (amount >= limits.minAmount) return;
  throw refused({
    status: 422,
    code: "relay_amount_too_small",
    title: "The amount is too small to pay without gas",
    detail: `Paying without gas takes at least ${limits.minAmount} base units; send ${amount} as a plain transfer.`,
    extensions: { minAmount: limits.minAmount.toString() },
  });
}

/**
 * THE check every relayed call passes (docs/gasless.md, "Limits"), whatever it is for
 * (a gasless payment, a refund send, a reward claim): the subject's quota, the
 * partner's daily quota and its daily gas budget on that network, counting
 * `estimatedCostWei` of the call about to be sent. Called by `relayContractCall`
 * (api/gasless/relayer.ts) inside the relayer's lease, so concurrent calls, in this
 * or another process, count each other; callers may call it earlier too, to refuse
 * before storing anything. Throws the refusal as a problem (`isRelayLimitRefusal`).
 */
export async function assertRelayAllowed(
  db: Kysely<Database>,
  limits: RelayLimits,
  params: RelayCharge & { estimatedCostWei?: bigint; now?: number },
): Promise<void> {
  const now = params.now ?? Date.now();
  if (params.subjectId !== null) {
    const ofSubject = await db
      .selectFrom("relayer_charge")
      .select((eb) => eb.fn.countAll<number | string>().as("count"))
      .where("subject_id", "=", params.subjectId)
      .where("purpose", "=", params.purpose)
      .executeTakeFirstOrThrow();
    if (Number(ofSubject.count) >= limits.sessionRelays) {
      throw refused({
        status: 409,
        code: "relay_session_limit",
        title: "This checkout cannot be paid without gas any more",
        detail: `The relayer already sent ${ofSubject.count} transaction(s) for it, the most it sends for one checkout; pay by plain transfer.`,
        extensions: { sessionRelays: limits.sessionRelays },
      });
    }
  }
  const today = await db
    .selectFrom("relayer_charge")
    .select(["reserved_wei", "gas_cost_wei"])
    .where("partner_id", "=", params.partnerId)
    .where("chain_id", "=", params.chainId)
    .where("day", "=", utcDay(now))
    .execute();
  const retryAfterSeconds = secondsToNextDay(now);
  if (today.length >= limits.partnerDailyRelays) {
    throw refused(
      {
        status: 429,
        code: "relay_quota_exceeded",
        title: "The relayer's daily quota for this shop is used up",
        detail: `The relayer sent ${today.length} transaction(s) for this shop today, its daily quota; pay by plain transfer, or retry after the time in Retry-After.`,
        extensions: { partnerDailyRelays: limits.partnerDailyRelays, retryable: true },
      },
      retryAfterSeconds,
    );
  }
  const spent = today.reduce((sum, row) => sum + BigInt(row.gas_cost_wei ?? row.reserved_wei), 0n);
  const estimated = params.estimatedCostWei ?? 0n;
  if (spent >= limits.partnerDailyGasWei || spent + estimated > limits.partnerDailyGasWei) {
    throw refused(
      {
        status: 429,
        code: "relay_budget_spent",
        title: "The relayer's daily gas budget for this shop is spent",
        detail: `The relayer spent ${spent} of this shop's ${limits.partnerDailyGasWei} wei of gas today; pay by plain transfer, or retry after the time in Retry-After.`,
        extensions: { spentWei: spent.toString(), budgetWei: limits.partnerDailyGasWei.toString(), retryable: true },
      },
      retryAfterSeconds,
    );
  }
}

/** Records a sent transaction against its partner (in the relayer's lease, right after the send). */
export async function recordRelayCharge(
  db: Kysely<Database>,
  params: RelayCharge & { transactionHash: string; reservedWei: bigint; now?: number },
): Promise<void> {
  const now = params.now ?? Date.now();
  const row: RelayerChargeTable = {
    id: `rch_${randomBytes(12).toString("hex")}`,
    partner_id: params.partnerId,
    chain_id: params.chainId,
    purpose: params.purpose,
    subject_id: params.subjectId,
    day: utcDay(now),
    transaction_hash: params.transactionHash.toLowerCase(),
    reserved_wei: params.reservedWei.toString(),
    gas_cost_wei: null,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto("relayer_charge").values(row).execute();
}

/** The cost of a mined (or reverted) relayed transaction, found by any of the hashes it was sent under. */
export async function settleRelayCharge(
  db: Kysely<Database>,
  params: { transactionHashes: readonly string[]; gasCostWei: bigint },
): Promise<void> {
  if (params.transactionHashes.length === 0) return;
  await db
    .updateTable("relayer_charge")
    .set({ gas_cost_wei: params.gasCostWei.toString(), updated_at: Date.now() })
    .where(
      "transaction_hash",
      "in",
      params.transactionHashes.map((hash) => hash.toLowerCase()),
    )
    .execute();
}

export type PartnerRelaySpend = {
  partnerId: string;
  chainId: number;
  relays: number;
  /** Gas of mined transactions, plus the maximum cost of those still in flight. */
  spentWei: bigint;
  /** What is left of the partner's daily budget on that network. */
  remainingWei: bigint;
};

/** What the relayer spent per partner and network on a UTC day (today by default), most first: the admin's view. */
export async function relaySpendByPartner(
  db: Kysely<Database>,
  limits: RelayLimits,
  params: { now?: number } = {},
): Promise<{ day: string; partners: PartnerRelaySpend[] }> {
  const day = utcDay(params.now ?? Date.now());
  const rows = await db
    .selectFrom("relayer_charge")
    .select(["partner_id", "chain_id", "reserved_wei", "gas_cost_wei"])
    .where("day", "=", day)
    .execute();
  const byKey = new Map<string, PartnerRelaySpend>();
  for (const row of rows) {
    const key = `${row.partner_id}:${row.chain_id}`;
    const spend = byKey.get(key) ?? {
      partnerId: row.partner_id,
      chainId: Number(row.chain_id),
      relays: 0,
      spentWei: 0n,
      remainingWei: 0n,
    };
    spend.relays += 1;
    spend.spentWei += BigInt(row.gas_cost_wei ?? row.reserved_wei);
    byKey.set(key, spend);
  }
  const partners = [...byKey.values()].map((spend) => ({
    ...spend,
    remainingWei: spend.spentWei >= limits.partnerDailyGasWei ? 0n : limits.partnerDailyGasWei - spend.spentWei,
  }));
  partners.sort((a, b) => (a.spentWei === b.spentWei ? 0 : a.spentWei > b.spentWei ? -1 : 1));
  return { day, partners };
}
