import type { Hex, TransactionReceipt } from "viem";
import type { Store } from "../store/open-store.js";
import type { RelayedAuthorizationTable, RelayStatus } from "../store/relay-tables.js";
import type { TransitionTable } from "../store/transition-table.js";

/**
 * The one writer of `relayed_authorization`: an EIP-3009 authorization the relayer
 * sends for a checkout. Born `queued` (`insertAuthorization`, one live per session);
 * every later change is one of `relayTransitions`, a guarded UPDATE on the status.
 */
export const relayTransitions = {
  submit: { from: ["queued"], to: "submitted", guard: "the relayer sent its transaction" },
  replace: { from: ["submitted"], to: "submitted", guard: "unmined past the replacement delay: same nonce, higher fee" },
  mine: { from: ["submitted"], to: "mined", guard: "a receipt of one of its transactions, status success" },
  revert: { from: ["submitted"], to: "failed", guard: "a receipt of one of its transactions, reverted" },
  fail: {
    from: ["queued", "submitted", "failed"],
    to: "failed",
    guard: "refused before sending, dropped, or reverted: frees the session (a mined one moved the USDC and stays mined)",
  },
} as const satisfies TransitionTable<RelayStatus>;

const fromStates = (name: keyof typeof relayTransitions) => [...relayTransitions[name].from] as RelayStatus[];

/** The authorization a payer signed with this nonce for this token, if one was ever submitted (the unique key of a replay). */
export async function authorizationOfPayerNonce(
  store: Store,
  key: { chainId: number; token: string; from: string; nonce: Hex },
): Promise<RelayedAuthorizationTable | undefined> {
  return store
    .selectFrom("relayed_authorization")
    .selectAll()
    .where("chain_id", "=", key.chainId)
    .where("token_address", "=", key.token.toLowerCase())
    .where("from_address", "=", key.from.toLowerCase())
    .where("nonce", "=", key.nonce.toLowerCase())
    .executeTakeFirst();
}

/** Whether a session holds a live authorization (queued, submitted or mined). */
export async function sessionHasLiveAuthorization(store: Store, sessionId: string): Promise<boolean> {
  const live = await store
    .selectFrom("relayed_authorization")
    .select("id")
    .where("live_session_id", "=", sessionId)
    .executeTakeFirst();
  return live !== undefined;
}

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
  await store
    .updateTable("relayed_authorization")
    .set(sent)
    .where("id", "=", id)
    .where("status", "in", fromStates("submit"))
    .execute();
}

/** The receipt of one of its transactions: what it cost, and whether it moved the USDC. */
export async function markReceipt(store: Store, id: string, receipt: TransactionReceipt, now: number): Promise<void> {
  await store
    .updateTable("relayed_authorization")
    .set({
      status: relayTransitions[receipt.status === "success" ? "mine" : "revert"].to,
      transaction_hash: receipt.transactionHash.toLowerCase(),
      gas_used: receipt.gasUsed.toString(),
      effective_gas_price: receipt.effectiveGasPrice.toString(),
      gas_cost_wei: (receipt.gasUsed * receipt.effectiveGasPrice).toString(),
      block_number: Number(receipt.blockNumber),
      updated_at: now,
    })
    .where("id", "=", id)
    .where("status", "in", fromStates(receipt.status === "success" ? "mine" : "revert"))
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
    .where("status", "in", fromStates("replace"))
    .execute();
}

/** A failed relay frees the session for another attempt (or a plain transfer) and is shown on it. */
export async function recordRelayFailure(context: { store: Store }, id: string, code: string, detail: string) {
  const now = Date.now();
  await context.store
    .updateTable("relayed_authorization")
    .set({
      status: relayTransitions.fail.to,
      live_session_id: null,
      failure_code: code,
      failure_detail: detail,
      updated_at: now,
    })
    .where("id", "=", id)
    .where("status", "in", fromStates("fail"))
    .execute();
}

/** A session's latest authorization (its gasless view: the relay's progress or failure). */
export async function latestAuthorizationOfSession(store: Store, sessionId: string) {
  return store
    .selectFrom("relayed_authorization")
    .selectAll()
    .where("session_id", "=", sessionId)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .executeTakeFirst();
}

/** The authorization whose relayed transaction this is, if any (on a network). */
export async function authorizationOfTransaction(store: Store, params: { chainId: number; transactionHash: string }) {
  return store
    .selectFrom("relayed_authorization")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where("transaction_hash", "=", params.transactionHash.toLowerCase())
    .executeTakeFirst();
}

/** Every authorization, newest first, optionally of one status (the admin's list). */
export async function latestAuthorizations(store: Store, params: { status?: RelayStatus; limit: number }) {
  let select = store.selectFrom("relayed_authorization").selectAll().orderBy("created_at", "desc").limit(params.limit);
  if (params.status !== undefined) select = select.where("status", "=", params.status);
  return select.execute();
}

/** Up to `limit` authorizations sent and not yet mined or failed: the relay worker's round. */
export async function submittedAuthorizations(store: Store, limit: number) {
  return store.selectFrom("relayed_authorization").selectAll().where("status", "=", "submitted").limit(limit).execute();
}
