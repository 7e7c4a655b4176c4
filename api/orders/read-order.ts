import type { Kysely } from "kysely";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../app-context.js";
import { paymentView } from "../checkout/session-view.js";
import { checksum, checksumOrNull } from "../checksum-address.js";
import { relayOfTransaction } from "../gasless/gasless-view.js";
import { problems } from "../http/problem.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { Database } from "../store/database.js";

/** The partner's own order; another partner's is as missing as one that does not exist. */
export async function findPartnerOrder(db: Kysely<Database>, params: { partnerId: string; orderId: string }) {
  const order = await db
    .selectFrom("orders")
    .selectAll()
    .where("id", "=", params.orderId)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  if (order === undefined) throw problems.notFound(`Order ${params.orderId}`);
  return order;
}

/** Everything a partner needs to reconcile one order: amounts, the transfer, details and certificate. */
export async function readOrder(context: AppContext, params: { partnerId: string; orderId: string }) {
  const order = await findPartnerOrder(context.store, params);
  const session = await latestSession(context.store, order.id, order.settled_session_id);
  const payment =
    order.settled_session_id === null
      ? undefined
      : await context.store
          .selectFrom("payment")
          .selectAll()
          .where("session_id", "=", order.settled_session_id)
          .where("status", "in", ["settled", "attached"])
          .executeTakeFirst();
  const certificate = await context.store
    .selectFrom("certificate")
    .selectAll()
    .where("order_id", "=", order.id)
    .executeTakeFirst();
  const relay =
    payment === undefined
      ? null
      : await relayOfTransaction(context.store, { chainId: payment.chain_id, transactionHash: payment.transaction_hash });
  const head = session ? (await context.indexed.heads()).get(session.chain_id)?.blockNumber : undefined;
  const network = session ? networkByChainId(context, session.chain_id) : undefined;

  return {
    id: order.id,
    externalOrderId: order.external_order_id,
    purchaseId: order.purchase_id,
    status: order.status,
    network: session?.network ?? null,
    chainId: session?.chain_id ?? null,
    totalPriceUsdc: session?.total_price_usdc ?? null,
    amountPaid: payment?.amount ?? null,
    session: session
      ? {
          id: session.id,
          status: session.status,
          expiresAt: new Date(Number(session.expires_at)).toISOString(),
          payment: paymentView(session),
        }
      : null,
    payment: payment
      ? {
          transactionHash: payment.transaction_hash,
          logIndex: payment.log_index,
          blockNumber: String(payment.block_number),
          from: checksum(payment.from_address),
          to: checksum(payment.to_address),
          amount: payment.amount,
          confirmations: head === undefined ? null : confirmationsOf({ blockNumber: BigInt(payment.block_number) }, head),
          requiredConfirmations: network?.confirmations ?? null,
          minedAt: new Date(Number(payment.block_timestamp) * 1000).toISOString(),
          // A gasless payment: the relayed authorization and the gas it cost the service.
          relay,
        }
      : null,
    contact: session?.contact_json ? JSON.parse(session.contact_json) : null,
    delivery: session?.delivery_json ? JSON.parse(session.delivery_json) : null,
    metadata: session?.metadata_json ? (JSON.parse(session.metadata_json) as Record<string, string>) : {},
    certificate: {
      enabled: session?.certificate_enabled === 1,
      status: certificate?.status ?? (session?.certificate_enabled === 1 ? "awaiting_wallet" : "not_requested"),
      contract: checksumOrNull(certificate?.contract_address),
      tokenId: certificate?.token_id ?? null,
      owner: checksumOrNull(certificate?.buyer),
      mintTransactionHash: certificate?.mint_transaction_hash ?? null,
    },
    fulfilment: order.fulfilled_at
      ? { reference: order.fulfilment_reference, fulfilledAt: new Date(Number(order.fulfilled_at)).toISOString() }
      : null,
    createdAt: new Date(Number(order.created_at)).toISOString(),
    updatedAt: new Date(Number(order.updated_at)).toISOString(),
  };
}

async function latestSession(store: Kysely<Database>, orderId: string, settledSessionId: string | null) {
  if (settledSessionId !== null)
    return store.selectFrom("checkout_session").selectAll().where("id", "=", settledSessionId).executeTakeFirst();
  return store
    .selectFrom("checkout_session")
    .selectAll()
    .where("order_id", "=", orderId)
    .orderBy("created_at", "desc")
    .executeTakeFirst();
}
