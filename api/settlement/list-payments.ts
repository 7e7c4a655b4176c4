import { z } from "zod";
import { checksum } from "../checksum-address.js";
import { decodeCursor, encodeCursor, splitPage } from "../http/cursor.js";
import type { PaymentStatus } from "../store/database.js";
import type { Store } from "../store/open-store.js";

export const PAYMENT_STATUSES = [
  "pending",
  "settled",
  "unresolved",
  "refund_requested",
  "attached",
  "reorged",
] as const satisfies readonly PaymentStatus[];

const cursorSchema = z.object({ t: z.number(), h: z.string(), l: z.number() });

/** Payments the engine recorded, oldest first; a partner sees its own, an administrator everyone's. */
export async function listPayments(
  store: Store,
  params: { partnerId?: string; status?: PaymentStatus; cursor?: string; limit: number },
) {
  let select = store
    .selectFrom("payment")
    .leftJoin("checkout_session", "checkout_session.id", "payment.session_id")
    .selectAll("payment")
    .select(["checkout_session.order_id", "checkout_session.amount_due as expected_amount"]);
  if (params.partnerId !== undefined) select = select.where("payment.partner_id", "=", params.partnerId);
  if (params.status !== undefined) select = select.where("payment.status", "=", params.status);
  if (params.cursor !== undefined) {
    const after = decodeCursor(params.cursor, cursorSchema);
    select = select.where((eb) =>
      eb.or([
        eb("payment.created_at", ">", after.t),
        eb.and([eb("payment.created_at", "=", after.t), eb("payment.transaction_hash", ">", after.h)]),
        eb.and([
          eb("payment.created_at", "=", after.t),
          eb("payment.transaction_hash", "=", after.h),
          eb("payment.log_index", ">", after.l),
        ]),
      ]),
    );
  }
  const rows = await select
    .orderBy("payment.created_at")
    .orderBy("payment.transaction_hash")
    .orderBy("payment.log_index")
    .limit(params.limit + 1)
    .execute();
  const { page, last } = splitPage(rows, params.limit);
  return {
    data: page.map((row) => ({
      chainId: row.chain_id,
      transactionHash: row.transaction_hash,
      logIndex: row.log_index,
      partnerId: row.partner_id,
      status: row.status,
      reason: row.reason,
      sessionId: row.session_id,
      orderId: row.order_id ?? null,
      /** The amount the session asked for, when the payment is linked to one. */
      expectedAmount: row.expected_amount ?? null,
      from: checksum(row.from_address),
      to: checksum(row.to_address),
      amount: row.amount,
      blockNumber: String(row.block_number),
      minedAt: new Date(Number(row.block_timestamp) * 1000).toISOString(),
      resolution: row.resolution,
    })),
    nextCursor:
      last === undefined ? null : encodeCursor({ t: Number(last.created_at), h: last.transaction_hash, l: last.log_index }),
  };
}
