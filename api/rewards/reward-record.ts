import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { type Address, getAddress, type Hex } from "viem";
import { keysetPage, type Page } from "../http/cursor.js";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { RewardStatus, RewardTable } from "../store/reward-tables.js";
import { type InputOf, planMove, type TransitionTable } from "../store/transition-table.js";
import { rewardIdOnChain } from "./reward-voucher.js";

/**
 * The reward record: the only module that reads or writes the `reward` table.
 * Rows become `Reward` (checksummed addresses, `bigint` money and blocks, epoch
 * milliseconds) in `toReward`; every state change is one of `rewardTransitions`,
 * applied by `moveReward` with one guarded UPDATE inside the caller's transaction.
 */
export type Reward = {
  id: string;
  onchainId: Hex;
  partnerId: string;
  orderId: string;
  externalOrderId: string;
  source: "grant" | "cashback";
  idempotencyKey: string | null;
  status: RewardStatus;
  chainId: number;
  distributor: Address;
  token: Address;
  amount: bigint;
  funder: Address | null;
  recipient: Address | null;
  voucherDeadlineSeconds: bigint | null;
  transactionHash: Hex | null;
  blockNumber: bigint | null;
  claimedAt: number | null;
  revokedReason: string | null;
  /** The revocation this reward owes once its voucher out lapses (its order was fully refunded meanwhile). */
  revocationDue: string | null;
  expiresAt: number;
  createdAt: number;
  updatedAt: number;
};

export const REWARD_STATUSES = ["granted", "voucher_issued", "pending", "claimed", "revoked", "expired"] as const;

/** Claim window of a reward (SPEC 16: 90 days by default); a voucher's deadline never passes it. */
export const REWARD_CLAIM_WINDOW_MS = 90 * 24 * 3_600_000;

export function toReward(row: RewardTable): Reward {
  return {
    id: row.id,
    onchainId: row.onchain_id as Hex,
    partnerId: row.partner_id,
    orderId: row.order_id,
    externalOrderId: row.external_order_id,
    source: row.source === "cashback" ? "cashback" : "grant",
    idempotencyKey: row.idempotency_key,
    status: row.status,
    chainId: Number(row.chain_id),
    distributor: getAddress(row.distributor_address),
    token: getAddress(row.token_address),
    amount: BigInt(row.amount),
    funder: row.funder === null ? null : getAddress(row.funder),
    recipient: row.recipient === null ? null : getAddress(row.recipient),
    voucherDeadlineSeconds: row.voucher_deadline === null ? null : BigInt(row.voucher_deadline),
    transactionHash: row.transaction_hash as Hex | null,
    blockNumber: row.block_number === null ? null : BigInt(row.block_number),
    claimedAt: row.claimed_at === null ? null : Number(row.claimed_at),
    revokedReason: row.revoked_reason,
    revocationDue: row.revocation_due ?? null,
    expiresAt: Number(row.expires_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/**
 * The newest block timestamp the index has processed on the reward's chain (unix
 * seconds): a voucher whose deadline is before it can no longer be claimed, and any
 * claim of it mined in time is already in the index.
 */
type IndexedClock = { indexedSeconds: bigint };
export type SeenClaim = {
  transactionHash: Hex;
  blockNumber: bigint;
  recipient: Address;
  confirmations: number;
  required: number;
};

const voucherStillOut = (reward: Reward, clock: IndexedClock) =>
  reward.status === "voucher_issued" &&
  (reward.voucherDeadlineSeconds === null || reward.voucherDeadlineSeconds >= clock.indexedSeconds);

/** Every legal move of a reward; a reward is created `granted` (`insertReward`). */
export const rewardTransitions = {
  issueVoucher: {
    from: ["granted", "voucher_issued"],
    to: "voucher_issued",
    guard: "a voucher for a wallet; a new one (another wallet) only once the previous voucher's deadline is behind the index",
    refuse: (input: IndexedClock & { recipient: Address; funder: Address; deadlineSeconds: bigint }, reward: Reward) =>
      reward.revocationDue !== null
        ? `the reward is to be revoked (${reward.revocationDue})`
        : voucherStillOut(reward, input)
          ? "a voucher of this reward is still out until its deadline"
          : BigInt(Math.floor(reward.expiresAt / 1000)) < input.deadlineSeconds
            ? "the voucher's deadline would pass the claim window"
            : undefined,
    set: (input: IndexedClock & { recipient: Address; funder: Address; deadlineSeconds: bigint }) => ({
      recipient: input.recipient.toLowerCase(),
      funder: input.funder.toLowerCase(),
      voucher_deadline: Number(input.deadlineSeconds),
    }),
  },
  seeClaim: {
    from: ["voucher_issued"],
    to: "pending",
    guard: "the index shows its `RewardClaimed`, not yet with the network's confirmations",
    refuse: (claim: SeenClaim) => (claim.confirmations >= claim.required ? "the claim is final: confirm it instead" : undefined),
    set: (claim: SeenClaim) => ({
      transaction_hash: claim.transactionHash.toLowerCase(),
      block_number: Number(claim.blockNumber),
      recipient: claim.recipient.toLowerCase(),
    }),
  },
  confirmClaim: {
    from: ["voucher_issued", "pending"],
    to: "claimed",
    guard: "its claim has the network's confirmations (`reward.claimed` in the same transaction)",
    refuse: (claim: SeenClaim) =>
      claim.confirmations < claim.required
        ? `the claim has ${claim.confirmations} of ${claim.required} confirmations`
        : undefined,
    set: (claim: SeenClaim, _reward: Reward, now: number) => ({
      transaction_hash: claim.transactionHash.toLowerCase(),
      block_number: Number(claim.blockNumber),
      recipient: claim.recipient.toLowerCase(),
      claimed_at: now,
    }),
  },
  dropClaim: {
    from: ["pending"],
    to: "voucher_issued",
    guard: "its unconfirmed claim left the index (a reorg): the voucher is out again",
    set: (_input: Record<string, never>) => ({ transaction_hash: null, block_number: null }),
  },
  reorgClaim: {
    from: ["claimed"],
    to: "voucher_issued",
    guard:
      "its confirmed claim left the index and the chain (a reorg; `reward.reorged`): the voucher is out again until its deadline",
    set: (_input: Record<string, never>) => ({ transaction_hash: null, block_number: null, claimed_at: null }),
  },
  revoke: {
    from: ["granted", "voucher_issued"],
    to: "revoked",
    guard:
      "by its partner, or when its order is fully refunded; with a voucher out, only once the voucher's deadline is behind the index",
    refuse: (input: IndexedClock & { reason: string }, reward: Reward) =>
      voucherStillOut(reward, input) ? "a voucher of this reward is out until its deadline" : undefined,
    set: (input: IndexedClock & { reason: string }) => ({ revoked_reason: input.reason }),
  },
  expire: {
    from: ["granted", "voucher_issued"],
    to: "expired",
    guard: "its claim window (`expiresAt`) ended and no voucher is still out",
    refuse: (input: IndexedClock & { now: number }, reward: Reward) =>
      input.now < reward.expiresAt
        ? "the claim window is still open"
        : voucherStillOut(reward, input)
          ? "a voucher of this reward is out until its deadline"
          : undefined,
    set: (_input: IndexedClock & { now: number }) => ({}),
  },
} as const satisfies TransitionTable<RewardStatus, string, RewardTable>;

export type RewardTransitionName = keyof typeof rewardTransitions;

export type RewardMove = { moved: true; reward: Reward } | { moved: false; reason: string };

/**
 * Applies one transition to the reward as it was read, inside the caller's
 * transaction. A transition the table does not list from the read status is a
 * defect (`TransitionRefused`); a refusal of its guard, or a concurrent change
 * (the guarded UPDATE matches nothing), answers `moved: false` and changes nothing.
 */
export async function moveReward<name extends RewardTransitionName>(
  trx: Kysely<Database>,
  params: { reward: Reward; transition: name; input: InputOf<(typeof rewardTransitions)[name]>; now: number },
): Promise<RewardMove> {
  assertInTransaction(trx, "reward");
  const { reward } = params;
  const move = planMove<RewardStatus, RewardTransitionName, RewardTable>("reward", rewardTransitions, params.transition, {
    current: reward.status,
    input: params.input,
    subject: reward,
    now: params.now,
  });
  if (move.refused !== undefined) return { moved: false, reason: move.refused };
  let update = trx
    .updateTable("reward")
    .set({ ...move.set, status: move.to, updated_at: params.now })
    .where("id", "=", reward.id)
    .where("status", "=", reward.status);
  // A voucher re-issued meanwhile changed the deadline the guard judged.
  update =
    reward.voucherDeadlineSeconds === null
      ? update.where("voucher_deadline", "is", null)
      : update.where("voucher_deadline", "=", Number(reward.voucherDeadlineSeconds));
  const result = await update.executeTakeFirst();
  if (result.numUpdatedRows !== 1n) {
    const current = await findReward(trx, reward.id);
    return { moved: false, reason: current === undefined ? "no such reward" : `the reward is ${current.status}` };
  }
  return { moved: true, reward: (await findReward(trx, reward.id)) as Reward };
}

export function newRewardId(): string {
  return `rw_${randomBytes(12).toString("hex")}`;
}

/** A new `granted` reward; a second automatic cashback of the same order is refused by the store (answers undefined). */
export async function insertReward(
  trx: Kysely<Database>,
  params: {
    id?: string;
    partnerId: string;
    orderId: string;
    externalOrderId: string;
    source: "grant" | "cashback";
    idempotencyKey: string | null;
    chainId: number;
    distributor: Address;
    token: Address;
    amount: bigint;
    now: number;
  },
): Promise<Reward | undefined> {
  assertInTransaction(trx, "reward");
  const id = params.id ?? newRewardId();
  const result = await trx
    .insertInto("reward")
    .values({
      id,
      onchain_id: rewardIdOnChain(id),
      partner_id: params.partnerId,
      order_id: params.orderId,
      external_order_id: params.externalOrderId,
      source: params.source,
      idempotency_key: params.idempotencyKey,
      status: "granted",
      chain_id: params.chainId,
      distributor_address: params.distributor.toLowerCase(),
      token_address: params.token.toLowerCase(),
      amount: params.amount.toString(),
      funder: null,
      recipient: null,
      voucher_deadline: null,
      transaction_hash: null,
      block_number: null,
      claimed_at: null,
      revoked_reason: null,
      revocation_due: null,
      expires_at: params.now + REWARD_CLAIM_WINDOW_MS,
      created_at: params.now,
      updated_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (result.numInsertedOrUpdatedRows === 0n) return undefined;
  return findReward(trx, id);
}

export async function findReward(db: Kysely<Database>, id: string): Promise<Reward | undefined> {
  const row = await db.selectFrom("reward").selectAll().where("id", "=", id).executeTakeFirst();
  return row === undefined ? undefined : toReward(row);
}

export async function findPartnerReward(
  db: Kysely<Database>,
  params: { partnerId: string; id: string },
): Promise<Reward | undefined> {
  const row = await db
    .selectFrom("reward")
    .selectAll()
    .where("id", "=", params.id)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  return row === undefined ? undefined : toReward(row);
}

export async function rewardsByOnchainIds(db: Kysely<Database>, onchainIds: readonly Hex[]): Promise<Reward[]> {
  if (onchainIds.length === 0) return [];
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where(
      "onchain_id",
      "in",
      onchainIds.map((id) => id.toLowerCase()),
    )
    .execute();
  return rows.map(toReward);
}

export async function rewardsOfOrders(db: Kysely<Database>, orderIds: readonly string[]): Promise<Reward[]> {
  if (orderIds.length === 0) return [];
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where("order_id", "in", [...orderIds])
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(toReward);
}

/** A partner's rewards, newest first, optionally of one order (keyset paging on (created_at, id)). */
export function partnerRewardsPage(
  db: Kysely<Database>,
  params: { partnerId: string; orderId?: string; status?: RewardStatus; cursor?: string; limit: number },
): Promise<Page<Reward>> {
  return keysetPage<RewardTable, { createdAt: number; id: string }, Reward>({
    cursor: params.cursor,
    limit: params.limit,
    resolveCursor: async (id) => {
      const row = await db
        .selectFrom("reward")
        .select(["created_at", "id"])
        .where("id", "=", id)
        .where("partner_id", "=", params.partnerId)
        .executeTakeFirst();
      return row === undefined ? undefined : { createdAt: Number(row.created_at), id: row.id };
    },
    cursorOf: (row) => row.id,
    fetch: (after, take) => {
      let query = db.selectFrom("reward").selectAll().where("partner_id", "=", params.partnerId);
      if (params.orderId !== undefined) query = query.where("order_id", "=", params.orderId);
      if (params.status !== undefined) query = query.where("status", "=", params.status);
      if (after !== undefined) {
        query = query.where((eb) => eb(eb.refTuple("created_at", "id"), "<", eb.tuple(after.createdAt, after.id)));
      }
      return query.orderBy("created_at", "desc").orderBy("id", "desc").limit(take).execute();
    },
    view: (rows) => rows.map(toReward),
  });
}

/** Rewards waiting for their claim to be seen or confirmed: every `pending` one, and vouchers still claimable. */
export async function rewardsAwaitingClaim(
  db: Kysely<Database>,
  params: { deadlineAfterSeconds: number; limit: number },
): Promise<Reward[]> {
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where((eb) =>
      eb.or([
        eb("status", "=", "pending"),
        eb.and([eb("status", "=", "voucher_issued"), eb("voucher_deadline", ">=", params.deadlineAfterSeconds)]),
      ]),
    )
    .orderBy("updated_at")
    .limit(params.limit)
    .execute();
  return rows.map(toReward);
}

/** Rewards whose claim window ended and that are still `granted` or `voucher_issued`. */
export async function rewardsPastWindow(db: Kysely<Database>, params: { now: number; limit: number }): Promise<Reward[]> {
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where("status", "in", ["granted", "voucher_issued"])
    .where("expires_at", "<=", params.now)
    .orderBy("expires_at")
    .limit(params.limit)
    .execute();
  return rows.map(toReward);
}

/** The rewards of a funder that can still be paid by a voucher (issued or being confirmed) on a chain. */
export async function vouchersOutOfFunder(
  db: Kysely<Database>,
  params: { chainId: number; funder: Address; deadlineAfterSeconds: number },
): Promise<Reward[]> {
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("funder", "=", params.funder.toLowerCase())
    .where((eb) =>
      eb.or([
        eb("status", "=", "pending"),
        eb.and([eb("status", "=", "voucher_issued"), eb("voucher_deadline", ">=", params.deadlineAfterSeconds)]),
      ]),
    )
    .execute();
  return rows.map(toReward);
}

/** A partner's rewards that may still be paid (granted, voucher out, or being confirmed). */
export async function outstandingRewardsOfPartner(db: Kysely<Database>, partnerId: string): Promise<Reward[]> {
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where("partner_id", "=", partnerId)
    .where("status", "in", ["granted", "voucher_issued", "pending"])
    .execute();
  return rows.map(toReward);
}

/**
 * Marks the rewards of an order whose voucher is out (or whose claim is being
 * confirmed) as owing a revocation, inside the caller's transaction: no new voucher
 * is issued for them (`issueVoucher`'s guard), and the reward-claims worker revokes
 * each once its voucher lapses unclaimed. Not a status change: the reward stays
 * where it is until then. Answers the rewards marked.
 */
export async function oweRevocation(
  trx: Kysely<Database>,
  params: { rewardIds: readonly string[]; reason: string; now: number },
): Promise<number> {
  assertInTransaction(trx, "reward");
  if (params.rewardIds.length === 0) return 0;
  const result = await trx
    .updateTable("reward")
    .set({ revocation_due: params.reason, updated_at: params.now })
    .where("id", "in", [...params.rewardIds])
    .where("status", "in", ["voucher_issued", "pending"])
    .where("revocation_due", "is", null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Rewards with a voucher out that owe a revocation (revoked once the voucher lapses). */
export async function rewardsOwingRevocation(db: Kysely<Database>, params: { limit: number }): Promise<Reward[]> {
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where("status", "=", "voucher_issued")
    .where("revocation_due", "is not", null)
    .orderBy("voucher_deadline")
    .limit(params.limit)
    .execute();
  return rows.map(toReward);
}

/** Claimed rewards of a chain whose claim is at or after `fromBlock`: the window a reorg can still strike. */
export async function recentlyClaimedRewards(
  db: Kysely<Database>,
  params: { chainId: number; fromBlock: bigint; limit: number },
): Promise<Reward[]> {
  const rows = await db
    .selectFrom("reward")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("status", "=", "claimed")
    .where("block_number", ">=", Number(params.fromBlock))
    .orderBy("block_number", "desc")
    .limit(params.limit)
    .execute();
  return rows.map(toReward);
}

/**
 * Every address named as the funder of a voucher on a chain, with the partner whose
 * reward named it (lower case): the funding addresses the books list (docs/accounting.md).
 */
export async function rewardFundersOnChain(
  db: Kysely<Database>,
  params: { chainId: number; partnerId?: string },
): Promise<{ address: string; partnerId: string }[]> {
  let query = db
    .selectFrom("reward")
    .select(["funder", "partner_id"])
    .distinct()
    .where("chain_id", "=", params.chainId)
    .where("funder", "is not", null)
    .orderBy("funder");
  if (params.partnerId !== undefined) query = query.where("partner_id", "=", params.partnerId);
  const rows = await query.execute();
  return rows.map((row) => ({ address: (row.funder as string).toLowerCase(), partnerId: row.partner_id }));
}
