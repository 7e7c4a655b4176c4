import type { Kysely } from "kysely";

// Landed migrations never change; add a new numbered file instead.

/**
 * Issue 40: a zero-value transfer is no payment (api/settlement/record-transfer.ts,
 * `isPaymentTransfer`); the ledger lists it as `zero_value`. Those the settlement worker
 * recorded before were unresolved, unmatched and linked to no session, and no event was
 * ever sent for them (they counted as spam): they leave the partner's unresolved queue.
 * One that was linked to a session or acted on by hand stays as it is.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const store = db as Kysely<{ payment: { amount: string; status: string; reason: string | null; session_id: string | null } }>;
  await store
    .deleteFrom("payment")
    .where("amount", "=", "0")
    .where("status", "=", "unresolved")
    .where("reason", "=", "unmatched")
    .where("session_id", "is", null)
    .execute();
}

/** The deleted rows described nothing but a transfer the index still holds: nothing to restore. */
export async function down(): Promise<void> {}
