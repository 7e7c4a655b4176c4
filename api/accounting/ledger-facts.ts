import type { AppContext } from "../app-context.js";
import type { IndexedTransfer } from "../indexed/indexed-chain.js";
import { paymentsByKeys } from "../settlement/payment-record.js";
import type { OutgoingFact, PaymentFact, RewardClaimFact, TransferFacts } from "./ledger-rules.js";

/** `${chainId}:${lower-case tx}:${logIndex}`: how facts are keyed (the refunds record keys its matches the same way). */
export const transferKey = (transfer: Pick<IndexedTransfer, "chainId" | "transactionHash" | "logIndex">) =>
  `${transfer.chainId}:${transfer.transactionHash.toLowerCase()}:${transfer.logIndex}`;

const transactionKey = (transfer: Pick<IndexedTransfer, "chainId" | "transactionHash">) =>
  `${transfer.chainId}:${transfer.transactionHash.toLowerCase()}`;

export type LedgerFacts = (transfer: IndexedTransfer) => TransferFacts;

/**
 * THE place where what the service made of a page of transfers is gathered, one
 * query per source, for the pure rules of ledger-rules.ts:
 *
 * - incoming: the payment the settlement worker recorded (payment-record.ts);
 * - outgoing: the refunds record's match of the transfer (`outgoingTransfersByKeys`
 *   in api/refunds/outgoing-transfer-record.ts): not on this branch yet, so every
 *   outgoing transfer is `unmatched_out` until it is wired below;
 * - reward claims: the index's `reward_claim` rows of the same transactions
 *   (`context.indexed.rewardClaims`): not on this branch yet, so none.
 */
export async function gatherLedgerFacts(
  context: Pick<AppContext, "store" | "indexed">,
  transfers: readonly IndexedTransfer[],
  addresses: ReadonlySet<string>,
): Promise<LedgerFacts> {
  const incoming = transfers.filter((transfer) => addresses.has(transfer.to.toLowerCase()));
  const outgoing = transfers.filter((transfer) => addresses.has(transfer.from.toLowerCase()));

  const payments: Map<string, PaymentFact> = await paymentsByKeys(context.store, incoming);
  // Wiring refunds: `await outgoingTransfersByKeys(context.store, outgoing)` answers this map's shape.
  const matches = new Map<string, OutgoingFact>();
  // Wiring rewards: `context.indexed.rewardClaims({ chainIds, ... })` of these transactions, grouped by transactionKey.
  const claims = new Map<string, RewardClaimFact[]>();
  void outgoing;

  return (transfer) => ({
    payment: payments.get(transferKey(transfer)),
    outgoing: matches.get(transferKey(transfer)),
    rewardClaims: claims.get(transactionKey(transfer)),
  });
}
