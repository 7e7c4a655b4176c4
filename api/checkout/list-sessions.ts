import { z } from "zod";
import { decodeCursor, encodeCursor, splitPage } from "../http/cursor.js";
import type { SessionStatus } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import { sessionView } from "./session-view.js";

export const SESSION_STATUSES = [
  "awaiting_payment",
  "payment_pending",
  "settled",
  "expired",
] as const satisfies readonly SessionStatus[];

const cursorSchema = z.object({ t: z.number(), i: z.string() });

/**
 * A partner's checkout sessions, newest first, each with its order's status (what
 * the console's "Sessions and orders" screen lists). RWA purchases of an issuer's
 * partner are included: they are sessions of that partner too.
 */
export async function listCheckoutSessions(
  store: Store,
  params: { partnerId: string; status?: SessionStatus; cursor?: string; limit: number },
) {
  let select = store
    .selectFrom("checkout_session")
    .innerJoin("orders", "orders.id", "checkout_session.order_id")
    .selectAll("checkout_session")
    .select([
      "orders.purchase_id as order_purchase_id",
      "orders.status as order_status",
      "orders.fulfilled_at as order_fulfilled_at",
    ])
    .where("checkout_session.partner_id", "=", params.partnerId);
  if (params.status !== undefined) select = select.where("checkout_session.status", "=", params.status);
  if (params.cursor !== undefined) {
    const before = decodeCursor(params.cursor, cursorSchema);
    select = select.where((eb) =>
      eb.or([
        eb("checkout_session.created_at", "<", before.t),
        eb.and([eb("checkout_session.created_at", "=", before.t), eb("checkout_session.id", "<", before.i)]),
      ]),
    );
  }
  const rows = await select
    .orderBy("checkout_session.created_at", "desc")
    .orderBy("checkout_session.id", "desc")
    .limit(params.limit + 1)
    .execute();
  const { page, last } = splitPage(rows, params.limit);
  return {
    data: page.map((row) => ({
      ...sessionView(row, { orderId: row.order_id, purchaseId: row.order_purchase_id }),
      kind: row.kind,
      order: {
        id: row.order_id,
        status: row.order_status,
        fulfilledAt: row.order_fulfilled_at === null ? null : new Date(Number(row.order_fulfilled_at)).toISOString(),
      },
    })),
    nextCursor: last === undefined ? null : encodeCursor({ t: Number(last.created_at), i: last.id }),
  };
}
