import type { Hex, TransactionReceipt } from "viem";
import type { Store } from "../store/open-store.js";
import type { RelayedAuthorizationTable } from "../store/relay-tables.js";

/**
 * The one writer of `relayed_authorization`: an EIP-3009 authorization the relayer
 * sends for a checkout, from `queued` to `submitted`, then `mined` or `failed`.
 *
 * | from        | to          | by                                                  |
 * |-------------|-------------|-----------------------------------------------------|
 * | (none)      | `queued`    | `insertAuthorization` (one live per session)        |
 * | `queued`    | `submitted` | `markSubmitted` (the relayer sent it)               |
 * | `submitted` | `submitted` | `markReplaced` (same nonce, higher fee)             |
 * | `submitted` | `mined`     | `markReceipt` (receipt status success)              |
 * | `submitted` | `failed`    | `markReceipt` (reverted)                            |
 * | any         | `failed`    | `recordRelayFailure` (frees the session)            |
 */

/** Stores a new authorization; the table's unique keys refuse a second live one per session or a reused nonce. */
export async function insertAuthorization(store: Store, row: RelayedAuthorizationTable): Promise<void> {
  await store.insertInto("relayed_authorization").values(row).execute();
}

export type SubmittedTransaction = Pick<
  RelayedAuthorizationTable,
  | "relayer_address"
  | "relayer_nonce"
  | "transaction_hash"
  | "transaction_hashes"
  | "gas_limit"
  | "max_fee_per_gas"
  | "max_priority_fee_per_gas"
  | "submitted_at"
  | "updated_at"
> & { status: "submitted" };

export async function markSubmitted(store: Store, id: string, sent: SubmittedTransaction): Promise<void> {
  await store.updateTable("relayed_authorization").set(sent).where("id", "=", id).execute();
}

/** The receipt of one of its transactions: what it cost, and whether it moved the USDC. */
export async function markReceipt(store: Store, id: string, receipt: TransactionReceipt, now: number): Promise<void> {
  await store
    .updateTable("relayed_authorization")
    .set({
      status: receipt.status === "success" ? "mined" : "failed",
      transaction_hash: receipt.transactionHash.toLowerCase(),
      gas_used: receipt.gasUsed.toString(),
      effective_gas_price: receipt.effectiveGasPrice.toString(),
      gas_cost_wei: (receipt.gasUsed * receipt.effectiveGasPrice).toString(),
      block_number: Number(receipt.blockNumber),
      updated_at: now,
    })
    .where("id", "=", id)
    .where("status", "=", "submitted")
    .execute();
}

/** A stuck transaction was sent again with the same nonce and a higher fee. */
export async function markReplaced(
  store: Store,
  row: Pick<RelayedAuthorizationTable, "id" | "replacements">,
  params: { hashes: Hex[]; hash: Hex; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; now: number },
): Promise<void> {
  await store
    .updateTable("relayed_authorization")
    .set({
      transaction_hash: params.hash.toLowerCase(),
      transaction_hashes: JSON.stringify([...params.hashes, params.hash.toLowerCase()]),
      max_fee_per_gas: params.maxFeePerGas.toString(),
      max_priority_fee_per_gas: params.maxPriorityFeePerGas.toString(),
      replacements: row.replacements + 1,
      submitted_at: params.now,
      updated_at: params.now,
    })
    .where("id", "=", row.id)
    .where("status", "=", "submitted")
    .execute();
}

/** A failed relay frees the session for another attempt (or a plain transfer) and is shown on it. */
export async function recordRelayFailure(context: { store: Store }, id: string, code: string, detail: string) {
  const now = Date.now();
  await context.store
    .updateTable("relayed_authorization")
    .set({ status: "failed", live_session_id: null, failure_code: code, failure_detail: detail, updated_at: now })
    .where("id", "=", id)
    .execute();
}
