/**
 * Whether the index of this process may be about to move, as the indexer's own JSON-RPC
 * transport (indexer-transport.ts) sees it: a latest-block poll that answered a new block,
 * or any request for block data, means Ponder is indexing something. Workers that follow
 * the indexed head (settlement, refunds) look at the head every few milliseconds while
 * that is so, and only a few times a second otherwise: on an idle service the head query
 * at 50 per second was about a third of the process's CPU (issue 30). The mint and reward
 * workers read the index at most once a second while it is idle.
 *
 * A process without that transport (an API replica, `ponder serve`; or
 * INDEXER_RPC_TRANSPORT=ponder) cannot tell, and always looks often.
 */
let transportInUse = false;
let lastActivityAt = 0;

/** How long after the last sign of activity the head is still watched closely. */
const ACTIVE_WINDOW_MS = 2_000;

/** How often a worker reads the indexed head while the indexer shows no activity. */
const IDLE_HEAD_CHECK_MS = 250;

/** The indexer of this process sends its requests through our transport. */
export function noteIndexerTransport(): void {
  transportInUse = true;
}

/** The indexer saw a new block or asked for block data. */
export function noteChainActivity(): void {
  lastActivityAt = Date.now();
}

/** True while the indexed head may move soon (or when this process cannot tell). */
export function indexMayMove(now = Date.now()): boolean {
  return !transportInUse || now - lastActivityAt < ACTIVE_WINDOW_MS;
}

/**
 * A worker's gate for reading the index: open at every call while the index may move,
 * and once per `idleMs` otherwise.
 */
export function indexReadGate(idleMs = IDLE_HEAD_CHECK_MS): (now?: number) => boolean {
  let lastOpen = 0;
  return (now = Date.now()) => {
    if (!indexMayMove(now) && now - lastOpen < idleMs) return false;
    lastOpen = now;
    return true;
  };
}
