import type { Kysely } from "kysely";
import type { Database } from "../store/database.js";

/**
 * The opening-balance record: per payment address, its USDC balance at the end of
 * the block before the indexer's start block, read once from the chain and kept, so
 * that every later balance is that figure plus what the index holds. Owns
 * `opening_balance`.
 */
export type OpeningBalance = {
  chainId: number;
  address: string;
  tokenAddress: string;
  blockNumber: bigint;
  balance: bigint;
  readAt: number;
};

export async function openingBalancesOf(
  db: Kysely<Database>,
  params: { chainId: number; addresses: readonly string[] },
): Promise<Map<string, OpeningBalance>> {
  if (params.addresses.length === 0) return new Map();
  const rows = await db
    .selectFrom("opening_balance")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .where(
      "address",
      "in",
      params.addresses.map((address) => address.toLowerCase()),
    )
    .execute();
  return new Map(
    rows.map((row) => [
      row.address,
      {
        chainId: Number(row.chain_id),
        address: row.address,
        tokenAddress: row.token_address,
        blockNumber: BigInt(row.block_number),
        balance: BigInt(row.balance),
        readAt: Number(row.read_at),
      },
    ]),
  );
}

/** Keeps a balance read from the chain; the first one kept wins (every reader of the same block reads the same figure). */
export async function keepOpeningBalance(db: Kysely<Database>, balance: OpeningBalance): Promise<void> {
  await db
    .insertInto("opening_balance")
    .values({
      chain_id: balance.chainId,
      address: balance.address.toLowerCase(),
      token_address: balance.tokenAddress.toLowerCase(),
      block_number: Number(balance.blockNumber),
      balance: balance.balance.toString(),
      read_at: balance.readAt,
    })
    .onConflict((oc) => oc.columns(["chain_id", "address"]).doNothing())
    .execute();
}
