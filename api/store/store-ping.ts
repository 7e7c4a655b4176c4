import { sql } from "kysely";
import type { Store } from "./open-store.js";

/** The cheapest read either dialect answers: health asks it to see whether the store is there. */
export async function pingStore(store: Store): Promise<void> {
  await sql`select 1 as ok`.execute(store);
}
