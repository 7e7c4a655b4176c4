/**
 * Confirmations, computed here only: a transfer (or a mint) in block `b` has
 * `head - b + 1` confirmations once the indexed head is at or past `b` (its own
 * block counts as the first), and 0 while the head lags behind it.
 */
export function confirmationsOf(mined: { blockNumber: bigint }, head: bigint): number {
  return head < mined.blockNumber ? 0 : Number(head - mined.blockNumber + 1n);
}

/** Whether a block is deep enough for a network that asks for `required` confirmations. */
export function isConfirmed(mined: { blockNumber: bigint }, head: bigint, required: number): boolean {
  return confirmationsOf(mined, head) >= required;
}

/**
 * What a customer is shown for a recorded transfer: it is in a block, so at least
 * 1, even when the cached head lags it (or is unknown).
 */
export function shownConfirmations(mined: { blockNumber: bigint }, head: bigint | undefined): number {
  return Math.max(1, head === undefined ? 1 : confirmationsOf(mined, head));
}
