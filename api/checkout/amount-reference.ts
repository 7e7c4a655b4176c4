import { randomInt } from "node:crypto";
import type { Kysely } from "kysely";
import { problem } from "../http/problem.js";
import { sessionSawTransfer } from "../payments/payment-record.js";
import type { Database } from "../store/database.js";

/** Offsets of 1..9999 base units: under one cent, added so the partner never receives less. */
export const MIN_OFFSET = 1;
export const MAX_OFFSET = 9_999;
const RANDOM_TRIES = 12;

/**
 * How long a session's reference stays its own after the session ended without any
 * transfer (expired unpaid, or superseded by a newer session of the same order): room
 * for a transfer sent in time but mined or indexed late to still be attributed to it.
 * Then the reference is released (docs/security.md, "Payment references").
 */
export const UNUSED_REFERENCE_GRACE_MS = 60 * 60 * 1000;

/**
 * Reserves `total + offset` on one payment address until `releasedAt`, with an
 * offset no other session on that address and total holds. The reservation's
 * primary key (chain, address, amount) makes a collision impossible even when many
 * sessions are created at once in several processes.
 *
 * A released reference is taken again only when no offset was ever held or all
 * were, and then the one released longest ago: a straggling payment to a released
 * reference then most likely finds no session and becomes an unresolved payment.
 */
export async function reserveAmount(
  trx: Kysely<Database>,
  params: { chainId: number; paymentAddresses: string[]; total: bigint; sessionId: string; releasedAt: number; now: number },
): Promise<{ paymentAddress: string; offset: number; amountDue: bigint }> {
  const addresses = shuffled(params.paymentAddresses);
  const insert = async (paymentAddress: string, offset: number) => {
    const amountDue = params.total + BigInt(offset);
    const result = await trx
      .insertInto("amount_reservation")
      .values({
        chain_id: params.chainId,
        payment_address: paymentAddress,
        amount_due: amountDue.toString(),
        total_price_usdc: params.total.toString(),
        session_id: params.sessionId,
        released_at: params.releasedAt,
      })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return result.numInsertedOrUpdatedRows === 1n ? { paymentAddress, offset, amountDue } : undefined;
  };

  for (const paymentAddress of addresses) {
    for (let attempt = 0; attempt < RANDOM_TRIES; attempt++) {
      const reserved = await insert(paymentAddress, randomInt(MIN_OFFSET, MAX_OFFSET + 1));
      if (reserved) return reserved;
    }
    // Crowded: pick among the offsets never held on this address and total.
    const held = await trx
      .selectFrom("amount_reservation")
      .select("amount_due")
      .where("chain_id", "=", params.chainId)
      .where("payment_address", "=", paymentAddress)
      .where("total_price_usdc", "=", params.total.toString())
      .execute();
    const heldOffsets = new Set(held.map((row) => Number(BigInt(row.amount_due) - params.total)));
    const free: number[] = [];
    for (let offset = MIN_OFFSET; offset <= MAX_OFFSET; offset++) if (!heldOffsets.has(offset)) free.push(offset);
    for (const offset of shuffled(free).slice(0, RANDOM_TRIES)) {
      const reserved = await insert(paymentAddress, offset);
      if (reserved) return reserved;
    }
  }
  for (const paymentAddress of addresses) {
    // Every offset is held or was: take over the ones released longest ago.
    const released = await trx
      .selectFrom("amount_reservation")
      .select(["amount_due", "released_at"])
      .where("chain_id", "=", params.chainId)
      .where("payment_address", "=", paymentAddress)
      .where("total_price_usdc", "=", params.total.toString())
      .where("released_at", "<", params.now)
      .orderBy("released_at")
      .limit(RANDOM_TRIES)
      .execute();
    for (const row of released) {
      const removed = await trx
        .deleteFrom("amount_reservation")
        .where("chain_id", "=", params.chainId)
        .where("payment_address", "=", paymentAddress)
        .where("amount_due", "=", row.amount_due)
        .where("released_at", "<", params.now)
        .executeTakeFirst();
      if (removed.numDeletedRows !== 1n) continue;
      const reserved = await insert(paymentAddress, Number(BigInt(row.amount_due) - params.total));
      if (reserved) return reserved;
    }
  }
  throw problem(
    "reference_space_exhausted",
    "Every sub-cent offset of this total is held by an open (or recently ended, or paid) session on the partner's payment addresses. Add a payment address, or retry once unpaid sessions have ended.",
    { retryable: true },
  );
}

/** The reservation an exact amount on a payment address names, if any (released or not). */
export async function findReservation(
  db: Kysely<Database>,
  /** `paymentAddress` in any case (the store keeps lower case). */
  params: { chainId: number; paymentAddress: string; amountDue: bigint },
): Promise<{ sessionId: string; releasedAt: number } | undefined> {
  const row = await db
    .selectFrom("amount_reservation")
    .select(["session_id", "released_at"])
    .where("chain_id", "=", params.chainId)
    .where("payment_address", "=", params.paymentAddress.toLowerCase())
    .where("amount_due", "=", params.amountDue.toString())
    .executeTakeFirst();
  return row === undefined ? undefined : { sessionId: row.session_id, releasedAt: Number(row.released_at) };
}

/**
 * A session ended without any transfer to its reference: the reference stays its
 * own for `UNUSED_REFERENCE_GRACE_MS` after `endedAt`, then is released. A session
 * that saw a transfer keeps its reference for the whole late window.
 */
export async function releaseUnusedReference(
  trx: Kysely<Database>,
  params: { sessionId: string; endedAt: number },
): Promise<void> {
  if (await sessionSawTransfer(trx, params.sessionId)) return;
  const releasedAt = params.endedAt + UNUSED_REFERENCE_GRACE_MS;
  await trx
    .updateTable("amount_reservation")
    .set({ released_at: releasedAt })
    .where("session_id", "=", params.sessionId)
    .where("released_at", ">", releasedAt)
    .execute();
}

/** A transfer named this session: its reference is held for the session's whole late window again. */
export async function holdReferenceForLateWindow(
  trx: Kysely<Database>,
  session: { id: string; lateUntil: number },
): Promise<void> {
  await trx
    .updateTable("amount_reservation")
    .set({ released_at: session.lateUntil })
    .where("session_id", "=", session.id)
    .where("released_at", "<", session.lateUntil)
    .execute();
}

function shuffled<item>(items: item[]): item[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = randomInt(0, i + 1);
    [copy[i], copy[j]] = [copy[j] as item, copy[i] as item];
  }
  return copy;
}
