import type { Store } from "../store/open-store.js";

/** Every worker's last heartbeat (`run-worker.ts` writes them), for health. */
export async function readHeartbeats(store: Store) {
  return store.selectFrom("worker_heartbeat").selectAll().execute();
}
