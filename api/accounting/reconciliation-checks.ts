import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";

/**
 * The reconciliation-check record: the latest check of each payment address (the
 * index's balance against the chain's, at the indexed head), written by the
 * reconciliation worker, read by health and the console. Owns `reconciliation_check`.
 */
export type ReconciliationCheck = {
  chainId: number;
  address: string;
  partnerId: string | null;
  blockNumber: bigint;
  computedBalance: bigint;
  chainBalance: bigint;
  difference: bigint;
  reconciled: boolean;
  checkedAt: number;
};

export async function keepReconciliationCheck(db: Kysely<Database>, check: ReconciliationCheck): Promise<void> {
  const row = {
    chain_id: check.chainId,
    address: check.address.toLowerCase(),
    partner_id: check.partnerId,
    block_number: Number(check.blockNumber),
    computed_balance: check.computedBalance.toString(),
    chain_balance: check.chainBalance.toString(),
    difference: check.difference.toString(),
    reconciled: check.reconciled ? 1 : 0,
    checked_at: check.checkedAt,
  };
  await db
    .insertInto("reconciliation_check")
    .values(row)
    .onConflict((oc) =>
      oc.columns(["chain_id", "address"]).doUpdateSet({
        partner_id: row.partner_id,
        block_number: row.block_number,
        computed_balance: row.computed_balance,
        chain_balance: row.chain_balance,
        difference: row.difference,
        reconciled: row.reconciled,
        checked_at: row.checked_at,
      }),
    )
    .execute();
}

/** The addresses whose latest check did not reconcile (a partner's, or every partner's). */
export async function unreconciledChecks(
  db: Kysely<Database>,
  params: { partnerId?: string } = {},
): Promise<ReconciliationCheck[]> {
  let query = db
    .selectFrom("reconciliation_check")
    .selectAll()
    .where("reconciled", "=", 0)
    .orderBy("chain_id")
    .orderBy("address");
  if (params.partnerId !== undefined) query = query.where("partner_id", "=", params.partnerId);
  const rows = await query.execute();
  return rows.map((row) => ({
    chainId: Number(row.chain_id),
    address: row.address,
    partnerId: row.partner_id,
    blockNumber: BigInt(row.block_number),
    computedBalance: BigInt(row.computed_balance),
    chainBalance: BigInt(row.chain_balance),
    difference: BigInt(row.difference),
    reconciled: Number(row.reconciled) === 1,
    checkedAt: Number(row.checked_at),
  }));
}
