import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";
import { RETRY_DELAYS_SECONDS } from "./subscription-rules.js";

/**
 * A partner's subscription settings: the only module that reads or writes
 * `subscription_settings`. Today one setting, the retry schedule of failed charges (SPEC 18:
 * 1 h, 6 h, 24 h and 72 h by default, a per-partner setting).
 */
export type SubscriptionSettings = { retryDelaysSeconds: number[] };

/** The partner's retry delays (seconds of chain time), or the default schedule. */
export async function subscriptionSettingsOf(db: Kysely<Database>, partnerId: string): Promise<SubscriptionSettings> {
  const row = await db
    .selectFrom("subscription_settings")
    .select("retry_delays_json")
    .where("partner_id", "=", partnerId)
    .executeTakeFirst();
  return { retryDelaysSeconds: row === undefined ? [...RETRY_DELAYS_SECONDS] : (JSON.parse(row.retry_delays_json) as number[]) };
}

/** Replaces the partner's retry schedule; a charge that failed already keeps the retry time it was given. */
export async function writeSubscriptionSettings(
  db: Kysely<Database>,
  params: { partnerId: string; retryDelaysSeconds: readonly number[]; now: number },
): Promise<void> {
  const retry_delays_json = JSON.stringify(params.retryDelaysSeconds);
  await db
    .insertInto("subscription_settings")
    .values({ partner_id: params.partnerId, retry_delays_json, updated_at: params.now })
    .onConflict((oc) => oc.column("partner_id").doUpdateSet({ retry_delays_json, updated_at: params.now }))
    .execute();
}
