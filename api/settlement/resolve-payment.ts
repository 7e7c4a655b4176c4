import type { Kysely } from "kysely";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../app-context.js";
import { ProblemError, problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import { confirmationsOf, findPayment, settleOrder } from "./record-transfer.js";

export type PaymentKey = { chainId: number; transactionHash: string; logIndex: number };
/** Runs inside the resolution's transaction (the admin portal writes its audit entry there). */
type AlsoInTransaction = (trx: Kysely<Database>) => Promise<void>;

const notUnresolved = (status: string) =>
  new ProblemError({
    status: 409,
    code: "payment_not_unresolved",
    title: "Only an unresolved payment can be resolved by hand",
    detail: `This payment is ${status}.`,
  });

/**
 * An administrator credits an unresolved payment (wrong amount, late, ...) to an
 * order: the order settles with that transfer and the partner hears
 * `purchase.settled` with `resolution: "attached"`, in one transaction.
 */
export async function attachPaymentToOrder(
  context: AppContext,
  params: PaymentKey & { orderId: string; note?: string; alsoInTransaction?: AlsoInTransaction },
) {
  const now = Date.now();
  await context.store.transaction().execute(async (trx) => {
    const payment = await findPayment(trx, { ...params, transactionHash: params.transactionHash.toLowerCase() });
    if (payment === undefined) throw problems.notFound("Payment");
    if (payment.status !== "unresolved") throw notUnresolved(payment.status);
    const order = await trx.selectFrom("orders").selectAll().where("id", "=", params.orderId).executeTakeFirst();
    if (order === undefined) throw problems.notFound(`Order ${params.orderId}`);
    if (order.settled_session_id !== null) {
      throw new ProblemError({
        status: 409,
        code: "order_already_settled",
        title: "The order is already paid",
        detail: "Mark the payment for refund instead.",
      });
    }
    const session = await trx
      .selectFrom("checkout_session")
      .selectAll()
      .where("order_id", "=", order.id)
      .where("chain_id", "=", payment.chain_id)
      .orderBy("created_at", "desc")
      .executeTakeFirst();
    if (session === undefined) throw problems.invalidRequest("The order has no checkout session on the payment's network.");
    const network = networkByChainId(context, payment.chain_id);
    if (network === undefined) throw problems.invalidRequest("The payment's network is not enabled.");

    const resolution = `attached to ${order.id}${params.note ? `: ${params.note}` : ""}`;
    await trx
      .updateTable("payment")
      .set({ status: "attached", session_id: session.id, partner_id: session.partner_id, resolution, updated_at: now })
      .where("chain_id", "=", payment.chain_id)
      .where("transaction_hash", "=", payment.transaction_hash)
      .where("log_index", "=", payment.log_index)
      .where("status", "=", "unresolved")
      .execute();
    await trx.updateTable("checkout_session").set({ status: "settled", updated_at: now }).where("id", "=", session.id).execute();
    const head = (await context.indexed.heads()).get(payment.chain_id)?.blockNumber ?? BigInt(payment.block_number);
    await settleOrder(trx, {
      session: { ...session, status: "settled" },
      payment: { ...payment, status: "attached", session_id: session.id },
      network,
      confirmations: confirmationsOf({ blockNumber: BigInt(payment.block_number) }, head),
      now,
      resolution: "attached",
    });
    await params.alsoInTransaction?.(trx);
  });
}

/** An administrator records that an unresolved payment is to be sent back; the refund itself happens off-service. */
export async function markPaymentForRefund(
  context: AppContext,
  params: PaymentKey & { note?: string; alsoInTransaction?: AlsoInTransaction },
) {
  const key = { ...params, transactionHash: params.transactionHash.toLowerCase() };
  await context.store.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable("payment")
      .set({ status: "refund_requested", resolution: params.note ?? "refund requested", updated_at: Date.now() })
      .where("chain_id", "=", key.chainId)
      .where("transaction_hash", "=", key.transactionHash)
      .where("log_index", "=", key.logIndex)
      .where("status", "=", "unresolved")
      .executeTakeFirst();
    if (result.numUpdatedRows !== 1n) {
      const payment = await findPayment(trx, key);
      if (payment === undefined) throw problems.notFound("Payment");
      throw notUnresolved(payment.status);
    }
    await params.alsoInTransaction?.(trx);
  });
}
