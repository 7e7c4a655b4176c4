/**
 * The one name of a chain log (a transfer, a claim) across the service:
 * `<chainId>:<transaction hash>:<log index>`, the hash in lower case. Lower case because
 * the index and the store keep hashes that way, so a key built from a row and one built
 * from a caller's hash (any case, as viem accepts it) are the same string; the key is
 * stored too (a refund's allowance row, outbox ordering keys, audit targets, event
 * fields), and one spelling keeps those joinable with what the index says.
 */
export type LogKey = string & { readonly logKey: unique symbol };

export type LogRef = { readonly chainId: number; readonly transactionHash: string; readonly logIndex: number };

export function logKey(log: LogRef): LogKey {
  return `${log.chainId}:${log.transactionHash.toLowerCase()}:${log.logIndex}` as LogKey;
}
