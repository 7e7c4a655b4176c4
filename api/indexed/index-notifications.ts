import { keepPostgresSession } from "../store/postgres-session.js";

export type IndexNotifications = {
  /** True while the session listens: the index's commits arrive as they happen. */
  connected(): boolean;
  close(): Promise<void>;
};

/** The session's name in the log and in `pg_stat_activity` (`settlement index notifications`). */
export const INDEX_SESSION_NAME = "index notifications";

/** How often the listening session is checked while no notification arrives. */
const CHECK_EVERY_MS = 10_000;

/**
 * The channel Ponder notifies on each realtime block it indexes into `schema`
 * (its `live_query_notify` trigger on `_ponder_checkpoint`, Ponder 0.16).
 */
export function indexChannel(schema: string): string {
  return `${schema}_live_query`;
}

/** `LISTEN` takes an identifier, not a parameter: quoted, so a schema name is taken as it is. */
export function listenStatement(channel: string): string {
  return `LISTEN "${channel.replaceAll('"', '""')}"`;
}

/**
 * Listens, on a session of its own, to the channel Ponder notifies when it commits a
 * realtime block to the index in `schema` (a block with no event of ours notifies too,
 * with `[]`: the head moved). Each notification calls `onIndexed`. The backfill and a
 * reorg's revert notify nothing (Ponder creates the trigger once the backfill is done,
 * and a revert runs without it); the block after a reorg does. `onConnectionChange`
 * says when the session is listening or not: what arrives while it is not is lost, so
 * whoever relies on it polls meanwhile and looks again once it is back.
 */
export function listenToIndex(params: {
  databaseUrl: string;
  schema: string;
  onIndexed: () => void;
  onConnectionChange: (connected: boolean) => void;
}): IndexNotifications {
  const channel = indexChannel(params.schema);
  let connected = false;
  const setConnected = (value: boolean) => {
    if (connected === value) return;
    connected = value;
    params.onConnectionChange(value);
  };
  const session = keepPostgresSession({
    url: params.databaseUrl,
    name: INDEX_SESSION_NAME,
    async onOpen(client) {
      client.on("notification", (message) => {
        if (message.channel === channel) params.onIndexed();
      });
      await client.query(listenStatement(channel));
      setConnected(true);
    },
    onLost: () => setConnected(false),
    checkEveryMs: CHECK_EVERY_MS,
    check: async (client) => void (await client.query("select 1")),
  });
  return {
    connected: () => connected,
    async close() {
      await session.close();
      setConnected(false);
    },
  };
}
