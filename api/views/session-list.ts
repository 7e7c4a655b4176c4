import { listCheckoutSessions } from "../checkout/list-sessions.js";
import { refundSummaries } from "../refunds/refunds.js";
import { rewardsOfOrders } from "../rewards/reward-record.js";
import type { SessionStatus } from "../store/database.js";
import type { Store } from "../store/open-store.js";

/** Rewards that still stand for the order: granted, on their way or claimed (not revoked, not expired). */
const STANDING_REWARDS = new Set(["granted", "voucher_issued", "pending", "claimed"]);

/**
 * The partner's sessions with what the console's order rows show beside each order: its
 * refunds (refunded, in progress, none/partial/full) and its standing rewards, read for
 * the whole page at once. Without them an order refunded in part read "paid".
 */
export async function listSessionsWithOrderSummaries(
  store: Store,
  params: { partnerId: string; status?: SessionStatus; cursor?: string; limit: number },
) {
  const page = await listCheckoutSessions(store, params);
  const orderIds = page.data.map((row) => row.order.id);
  const refunds = await refundSummaries(
    store,
    page.data.map((row) => ({
      orderId: row.order.id,
      paid: row.order.amountPaid === null ? null : BigInt(row.order.amountPaid),
    })),
  );
  const rewards = (await rewardsOfOrders(store, orderIds)).filter((reward) => STANDING_REWARDS.has(reward.status));
  return {
    ...page,
    data: page.data.map((row) => {
      const own = rewards.filter((reward) => reward.orderId === row.order.id);
      const refund = refunds.get(row.order.id);
      return {
        ...row,
        order: {
          ...row.order,
          amountRefunded: refund?.amountRefunded ?? "0",
          amountRefundPending: refund?.amountRefundPending ?? "0",
          refundStatus: refund?.refundStatus ?? "none",
          rewardCount: own.length,
          amountRewarded: own.reduce((sum, reward) => sum + reward.amount, 0n).toString(),
        },
      };
    }),
  };
}
