import type { Kysely } from "kysely";
import type { AppContext } from "../app-context.js";
import { findIdempotentResource, recordIdempotentResource, requestHash } from "../checkout/idempotency.js";
import { getSession } from "../checkout/session-record.js";
import { networkByChainId } from "../config/enabled-networks.js";
import type { NetworkConfig } from "../config/networks.js";
import { problem } from "../http/problem.js";
import type { Order } from "../orders/order-record.js";
import { findPartnerOrder } from "../orders/read-order.js";
import { paymentOfSession } from "../payments/payment-record.js";
import type { Database } from "../store/database.js";
import { findReward, insertReward, type Reward, rewardsOfOrders } from "./reward-record.js";
import { provenFunder, rewardSettingsOf } from "./reward-settings.js";

/** Statuses whose amount still counts against the order's `amountPaid`. */
const COUNTING: readonly Reward["status"][] = ["granted", "voucher_issued", "pending", "claimed"];

/** floor(amountPaid × bps / 10 000): the automatic cashback of a settlement (pure). */
export function cashbackAmount(amountPaid: bigint, cashbackBps: number): bigint {
  return (amountPaid * BigInt(cashbackBps)) / 10_000n;
}

/** Whether granting `amount` keeps the order's rewards within what was paid (pure). */
export function withinAmountPaid(existing: readonly Pick<Reward, "status" | "amount">[], amount: bigint, amountPaid: bigint) {
  const granted = existing.filter((reward) => COUNTING.includes(reward.status)).reduce((sum, r) => sum + r.amount, 0n);
  return granted + amount <= amountPaid;
}

type SettledOrder = { order: Order; amountPaid: bigint; network: NetworkConfig; token: NetworkConfig["usdc"] };

async function settledOrderOf(context: AppContext, db: Kysely<Database>, order: Order): Promise<SettledOrder> {
  if ((order.status !== "paid" && order.status !== "fulfilled") || order.settledSessionId === null) {
    throw problem("reward_order_not_settled", `The order is ${order.status}; rewards are granted on settled orders only.`);
  }
  const session = await getSession(db, order.settledSessionId);
  const payment = await paymentOfSession(db, { sessionId: session.id, statuses: ["settled", "attached"] });
  const network = networkByChainId(context, session.chainId);
  if (payment === undefined) {
    throw problem("reward_order_not_settled", "The order's payment is not settled.");
  }
  if (network?.rewardDistributor === undefined || context.settings.voucherPrivateKey === undefined) {
    throw problem(
      "rewards_unavailable",
      `No reward distributor is configured on ${network?.name ?? `chain ${session.chainId}`}.`,
    );
  }
  return { order, amountPaid: payment.amount, network, token: session.tokenAddress };
}

/**
 * `POST /v1/orders/:id/rewards`: a reward of `amount` for a settled order of the
 * partner, idempotent on `idempotencyKey` (a replay answers the same reward,
 * `created: false`). The order's rewards may not together exceed its `amountPaid`.
 */
export async function grantReward(
  context: AppContext,
  params: { partnerId: string; orderId: string; amount: bigint; idempotencyKey: string; now?: number },
): Promise<{ reward: Reward; created: boolean }> {
  const now = params.now ?? Date.now();
  const scope = `reward:${params.orderId}`;
  const hash = requestHash({ orderId: params.orderId, amount: params.amount.toString() });
  const key = { partnerId: params.partnerId, scope, key: params.idempotencyKey, hash };
  const replayed = await findIdempotentResource(context.store, key);
  if (replayed !== undefined) return { reward: (await findReward(context.store, replayed)) as Reward, created: false };

  const order = await findPartnerOrder(context.store, { partnerId: params.partnerId, orderId: params.orderId });
  const settings = await rewardSettingsOf(context.store, params.partnerId);
  if (provenFunder(settings) === undefined) {
    throw problem(
      "rewards_not_configured",
      "Set and prove a funding address first (POST /v1/rewards/settings/funding-challenge, then PUT /v1/rewards/settings).",
    );
  }
  const settled = await settledOrderOf(context, context.store, order);
  return context.store
    .transaction()
    .execute(async (trx) => {
      const again = await findIdempotentResource(trx, key);
      if (again !== undefined) return { reward: (await findReward(trx, again)) as Reward, created: false };
      const existing = await rewardsOfOrders(trx, [order.id]);
      if (!withinAmountPaid(existing, params.amount, settled.amountPaid)) {
        throw problem(
          "reward_exceeds_amount_paid",
          `The order was paid ${settled.amountPaid} base units; its rewards may not exceed that.`,
          { amountPaid: settled.amountPaid.toString() },
        );
      }
      const reward = await insertReward(trx, {
        partnerId: params.partnerId,
        orderId: order.id,
        externalOrderId: order.externalOrderId,
        source: "grant",
        idempotencyKey: params.idempotencyKey,
        chainId: settled.network.chainId,
        distributor: settled.network.rewardDistributor as NonNullable<NetworkConfig["rewardDistributor"]>,
        token: settled.token,
        amount: params.amount,
        now,
      });
      if (reward === undefined) throw new Error("a new reward id collided");
      if (!(await recordIdempotentResource(trx, { ...key, resourceId: reward.id, now }))) {
        // A concurrent request with the same key won: roll this one back and answer its reward.
        throw new IdempotencyRace();
      }
      return { reward, created: true };
    })
    .catch(async (error) => {
      if (!(error instanceof IdempotencyRace)) throw error;
      const winner = await findIdempotentResource(context.store, key);
      return { reward: (await findReward(context.store, winner as string)) as Reward, created: false };
    });
}

class IdempotencyRace extends Error {}

/**
 * The automatic cashback of a settlement, inside the settlement's transaction:
 * floor(amountPaid × cashbackBps / 10 000) when the partner set `cashbackBps` and a
 * proven funding address and the network has a distributor; at most one per order (the
 * store's unique index), so a replayed settlement adds nothing.
 */
export async function grantCashbackAtSettlement(
  trx: Kysely<Database>,
  params: { order: Order; amountPaid: bigint; network: NetworkConfig; token: NetworkConfig["usdc"]; now: number },
): Promise<Reward | undefined> {
  const { network } = params;
  if (network.rewardDistributor === undefined) return undefined;
  const settings = await rewardSettingsOf(trx, params.order.partnerId);
  if (settings.cashbackBps <= 0 || provenFunder(settings) === undefined) return undefined;
  const amount = cashbackAmount(params.amountPaid, settings.cashbackBps);
  if (amount <= 0n) return undefined;
  return insertReward(trx, {
    partnerId: params.order.partnerId,
    orderId: params.order.id,
    externalOrderId: params.order.externalOrderId,
    source: "cashback",
    idempotencyKey: null,
    chainId: network.chainId,
    distributor: network.rewardDistributor,
    token: params.token,
    amount,
    now: params.now,
  });
}
