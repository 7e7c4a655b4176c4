/**
 * Tables of refunds (SPEC 15, migrations 0013 and 0018). Same conventions as `database.ts`:
 * addresses and hashes lower-case hex, money as decimal strings of USDC base units,
 * instants as integer milliseconds since epoch.
 */
export interface RefundTables {
  refund: RefundTable;
  refund_allowance: RefundAllowanceTable;
  outgoing_transfer: OutgoingTransferTable;
}

export type RefundStatus = "awaiting_destination" | "ready" | "pending" | "succeeded" | "cancelled";
export type RefundReason = "requested_by_customer" | "duplicate" | "wrong_amount" | "late" | "other";

export interface RefundTable {
  id: string;
  partner_id: string;
  /** The order the refunded payment credited (or was submitted for); null for a payment that named no session. */
  order_id: string | null;
  /** The payment refunded: the money came in with this transfer, and goes back out of its recipient. */
  payment_chain_id: number;
  payment_transaction_hash: string;
  payment_log_index: number;
  /** Whether the payment credited the order (`order`) or is an unresolved one (`payment`). */
  subject: "order" | "payment";
  token_address: string;
  /** The payment address that received the money: the refund is sent from it. */
  from_address: string;
  /** The original payer (`from` of the payment), the destination when the partner asks for `payer`. */
  payer_address: string;
  amount: string;
  reason: RefundReason;
  note: string | null;
  destination: string | null;
  status: RefundStatus;
  /** SHA-256 (hex) of the customer's refund token; the token itself is shown once, in `customerUrl`. */
  token_hash: string | null;
  ready_at: number | null;
  /** The indexed head (block number) when it became ready (migration 0018; null for a refund ready before it). */
  ready_block: number | null;
  /** When "Send with the test account" claimed its one send (local and fork mode; migration 0018). */
  test_send_claimed_at: number | null;
  transfer_transaction_hash: string | null;
  transfer_log_index: number | null;
  transfer_block_number: number | null;
  transfer_block_hash: string | null;
  created_at: number;
  updated_at: number;
  succeeded_at: number | null;
  cancelled_at: number | null;
}

/**
 * The guard of "never refund more than was paid": one row per refunded payment, holding
 * the sum of its live (not cancelled) refunds. Every refund created or cancelled changes
 * it with a compare-and-set in the refund's own transaction.
 */
export interface RefundAllowanceTable {
  /** `<chainId>:<transaction hash>:<log index>` of the payment. */
  payment_key: string;
  committed: string;
  /** Set when the payment's order became fully refunded (see api/refunds/fully-refunded.ts). */
  fully_refunded_at: number | null;
  updated_at: number;
}

export type OutgoingTransferStatus = "matched" | "unmatched" | "reorged";

/** Every canonical-USDC transfer out of a watched payment address the index held, recorded once. */
export interface OutgoingTransferTable {
  chain_id: number;
  transaction_hash: string;
  log_index: number;
  /** The partner owning the sending payment address (null for an address no partner holds in the store). */
  partner_id: string | null;
  token_address: string;
  from_address: string;
  to_address: string;
  amount: string;
  block_number: number;
  block_hash: string;
  block_timestamp: number;
  status: OutgoingTransferStatus;
  refund_id: string | null;
  created_at: number;
  updated_at: number;
}
