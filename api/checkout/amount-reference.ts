import { randomInt } from "node:crypto";
import type { Kysely } from "kysely";
import { ProblemError } from "../http/problem.js";
import type { Database } from "../store/database.js";

/** Offsets of 1..9999 base units: under one cent, added so the partner never receives less. */
export const MIN_OFFSET = 1;
export const MAX_OFFSET = 9_999;
const RANDOM_TRIES = 12;

/**
 * Reserves `total + offset` on one payment address until `releasedAt`, with an
 * offset no other open (or late-window) session on that address and total holds.
 * The reservation's primary key (chain, address, amount) makes a collision
 * impossible even when many sessions are created at once in several processes.
 */
export async function reserveAmount(
  trx: Kysely<Database>,
  params: { chainId: number; paymentAddresses: string[]; total: bigint; sessionId: string; releasedAt: number; now: number },
): Promise<{ paymentAddress: string; offset: number; amountDue: bigint }> {
  for (const paymentAddress of shuffled(params.paymentAddresses)) {
    const tryOffset = async (offset: number) => {
      const amountDue = params.total + BigInt(offset);
      // A reservation whose late window has passed no longer protects anyone.
      await trx
        .deleteFrom("amount_reservation")
        .where("chain_id", "=", params.chainId)
        .where("payment_address", "=", paymentAddress)
        .where("amount_due", "=", amountDue.toString())
        .where("released_at", "<", params.now)
        .execute();
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

    for (let attempt = 0; attempt < RANDOM_TRIES; attempt++) {
      const reserved = await tryOffset(randomInt(MIN_OFFSET, MAX_OFFSET + 1));
      if (reserved) return reserved;
    }
    // Crowded: pick among the offsets actually free on this address and total.
    const taken = await trx
      .selectFrom("amount_reservation")
      .select("amount_due")
      .where("chain_id", "=", params.chainId)
      .where("payment_address", "=", paymentAddress)
      .where("total_price_usdc", "=", params.total.toString())
      .where("released_at", ">=", params.now)
      .execute();
    const takenOffsets = new Set(taken.map((row) => Number(BigInt(row.amount_due) - params.total)));
    const free: number[] = [];
    for (let offset = MIN_OFFSET; offset <= MAX_OFFSET; offset++) if (!takenOffsets.has(offset)) free.push(offset);
    for (const offset of shuffled(free).slice(0, RANDOM_TRIES)) {
      const reserved = await tryOffset(offset);
      if (reserved) return reserved;
    }
  }
  throw new ProblemError({
    status: 503,
    code: "reference_space_exhausted",
    title: "No payment reference is free for this amount",
    detail:
      "Every sub-cent offset of this total is held by an open session on the partner's payment addresses. Add a payment address or retry later.",
  });
}

function shuffled<item>(items: item[]): item[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = randomInt(0, i + 1);
    [copy[i], copy[j]] = [copy[j] as item, copy[i] as item];
  }
  return copy;
}
