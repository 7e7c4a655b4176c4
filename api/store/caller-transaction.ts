import type { Kysely } from "kysely";
import type { Database } from "./database.js";

/**
 * Record modules write only inside a transaction their caller opened, so a state
 * change and what goes with it (its event, its deliveries, the order it credits)
 * commit together or not at all. A write handed the bare store is a programming
 * error, caught on its first run rather than in production under a race.
 */
export function assertInTransaction(db: Kysely<Database>, record: string): void {
  if (!db.isTransaction) throw new Error(`${record} writes run inside the caller's transaction`);
}
