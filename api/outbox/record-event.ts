import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";

export const EVENT_TYPES = [
  "purchase.settled",
  "certificate.minted",
  "reward.claimed",
  "session.expired",
  "payment.unresolved",
  "order.fulfilled",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The envelope of seed 2.6; `data` amounts are decimal strings of USDC base units. */
export type EventEnvelope = {
  id: string;
  type: EventType;
  createdAt: string;
  data: {
    externalOrderId?: string;
    orderId?: string;
    purchaseId?: string;
    transactionHash?: string;
    [key: string]: unknown;
  };
};

/**
 * Writes an event to the outbox. Call it with the transaction that makes the state
 * change it reports, so the change and its event commit (or roll back) together.
 */
export async function recordEvent(
  trx: Kysely<Database>,
  params: { partnerId: string; type: EventType; orderingKey: string; data: EventEnvelope["data"]; now?: number },
): Promise<EventEnvelope> {
  const now = params.now ?? Date.now();
  const envelope: EventEnvelope = {
    id: `evt_${randomUUID().replaceAll("-", "")}`,
    type: params.type,
    createdAt: new Date(now).toISOString(),
    data: params.data,
  };
  await trx
    .insertInto("event")
    .values({
      id: envelope.id,
      partner_id: params.partnerId,
      type: envelope.type,
      ordering_key: params.orderingKey,
      payload: JSON.stringify(envelope),
      created_at: now,
    })
    .execute();
  return envelope;
}
