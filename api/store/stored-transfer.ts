import type { Address, Hex } from "viem";
import { checksum } from "../values/checksum-address.js";

/**
 * The columns of a USDC transfer as a record keeps it (`payment`, `outgoing_transfer`):
 * its key, its parties and amount, and its block. One converter each way, so the two
 * records read and write a transfer alike: hashes and addresses lower case in the row
 * (as the index writes them), EIP-55 addresses, `bigint` amount and block, and the
 * block's time as epoch milliseconds in the domain (seconds in the row).
 */
export type StoredTransferColumns = {
  chain_id: number;
  transaction_hash: string;
  log_index: number;
  from_address: string;
  to_address: string;
  amount: string;
  block_number: number;
  block_hash: string;
  block_timestamp: number;
};

export type StoredTransfer = {
  chainId: number;
  transactionHash: Hex;
  logIndex: number;
  from: Address;
  to: Address;
  amount: bigint;
  blockNumber: bigint;
  blockHash: Hex;
  /** The block's timestamp, in epoch milliseconds (the chain counts seconds). */
  minedAt: number;
};

/** Reads the transfer columns of a row (Postgres's int8 columns may come back as strings). */
export function toStoredTransfer(row: StoredTransferColumns): StoredTransfer {
  return {
    chainId: Number(row.chain_id),
    transactionHash: row.transaction_hash as Hex,
    logIndex: Number(row.log_index),
    from: checksum(row.from_address),
    to: checksum(row.to_address),
    amount: BigInt(row.amount),
    blockNumber: BigInt(row.block_number),
    blockHash: row.block_hash as Hex,
    minedAt: Number(row.block_timestamp) * 1000,
  };
}

/** The transfer columns of a new row. */
export function storedTransferColumns(transfer: StoredTransfer): StoredTransferColumns {
  return {
    chain_id: transfer.chainId,
    transaction_hash: transfer.transactionHash.toLowerCase(),
    log_index: transfer.logIndex,
    from_address: transfer.from.toLowerCase(),
    to_address: transfer.to.toLowerCase(),
    amount: transfer.amount.toString(),
    block_number: Number(transfer.blockNumber),
    block_hash: transfer.blockHash.toLowerCase(),
    block_timestamp: Math.floor(transfer.minedAt / 1000),
  };
}
