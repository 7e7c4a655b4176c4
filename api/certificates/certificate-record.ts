import type { Kysely } from "kysely";
import { type Address, getAddress, type Hex } from "viem";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { CertificateStatus, CertificateTable, Database } from "../store/database.js";
import { type InputOf, planMove, type TransitionTable } from "../store/transition-table.js";

/**
 * The certificate record: the only module that reads or writes the `certificate`
 * table. Rows become `Certificate` (checksummed addresses, `bigint` chain numbers,
 * epoch milliseconds); every state change is one of `certificateTransitions`,
 * applied by one guarded UPDATE inside the caller's transaction, so two workers or
 * a worker and a claim cannot both move the same certificate.
 */
export type Certificate = {
  orderId: string;
  purchaseId: Hex;
  status: CertificateStatus;
  chainId: number;
  contract: Address;
  /** The wallet the voucher names (and, once minted, the certificate's owner). */
  buyer: Address | null;
  tokenId: bigint;
  /** The voucher's deadline in seconds since the epoch, as the contract reads it. */
  voucherDeadlineSeconds: bigint | null;
  mintTransactionHash: Hex | null;
  mintBlockNumber: bigint | null;
  mintedAt: number | null;
  createdAt: number;
  updatedAt: number;
};

export function toCertificate(row: CertificateTable): Certificate {
  return {
    orderId: row.order_id,
    purchaseId: row.purchase_id as Hex,
    status: row.status,
    chainId: Number(row.chain_id),
    contract: getAddress(row.contract_address),
    buyer: row.buyer === null ? null : getAddress(row.buyer),
    tokenId: BigInt(row.token_id),
    voucherDeadlineSeconds: row.voucher_deadline === null ? null : BigInt(row.voucher_deadline),
    mintTransactionHash: row.mint_transaction_hash as Hex | null,
    mintBlockNumber: row.mint_block_number === null ? null : BigInt(row.mint_block_number),
    mintedAt: row.minted_at === null ? null : Number(row.minted_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A mint the index saw, with how deep its block is. */
export type SeenMint = { transactionHash: Hex; blockNumber: bigint; buyer: Address; confirmations: number; required: number };

/**
 * Every legal move of a certificate. A certificate is created `awaiting_wallet`
 * when its order settles (`createCertificate`); anything not listed here is illegal.
 */
export const certificateTransitions = {
  /** The buyer asks for a voucher; asking again (other wallet, expired voucher) issues a new one until a mint is seen. */
  issueVoucher: {
    from: ["awaiting_wallet", "voucher_issued"],
    to: "voucher_issued",
    guard: "none (a new voucher until a mint is seen)",
    set: (input: { buyer: Address; deadlineSeconds: bigint }) => ({
      buyer: input.buyer.toLowerCase(),
      voucher_deadline: Number(input.deadlineSeconds),
    }),
  },
  /** The index shows the mint, not yet deep enough to count. */
  seeMint: {
    from: ["voucher_issued"],
    to: "pending",
    guard: "the mint has fewer confirmations than required",
    refuse: (mint: SeenMint) => (mint.confirmations >= mint.required ? "the mint is final: confirm it instead" : undefined),
    set: (mint: SeenMint) => ({ mint_transaction_hash: mint.transactionHash, mint_block_number: Number(mint.blockNumber) }),
  },
  /** The mint has the network's confirmations: the certificate is the buyer's. */
  confirmMint: {
    from: ["voucher_issued", "pending"],
    to: "minted",
    guard: "the mint has the network's confirmations",
    refuse: (mint: SeenMint) =>
      mint.confirmations < mint.required ? `the mint has ${mint.confirmations} of ${mint.required} confirmations` : undefined,
    set: (mint: SeenMint, _certificate: unknown, now: number) => ({
      buyer: mint.buyer.toLowerCase(),
      mint_transaction_hash: mint.transactionHash,
      mint_block_number: Number(mint.blockNumber),
      minted_at: now,
    }),
  },
} as const satisfies TransitionTable<CertificateStatus, string, CertificateTable>;

export type CertificateTransitionName = keyof typeof certificateTransitions;

export type TransitionOutcome = { moved: true; certificate: Certificate } | { moved: false; reason: string };

/**
 * Applies one transition inside the caller's transaction. Refused by its guard, or
 * because the certificate is not (any more) in a `from` state: `moved: false` with
 * the reason, and nothing changes.
 */
export async function transitionCertificate<name extends CertificateTransitionName>(
  trx: Kysely<Database>,
  params: { orderId: string; transition: name; input: InputOf<(typeof certificateTransitions)[name]>; now: number },
): Promise<TransitionOutcome> {
  assertInTransaction(trx, "certificate");
  // Moved by `status IN from` without a read: a certificate no longer in a `from` state is a refusal, not a defect.
  const move = planMove<CertificateStatus, CertificateTransitionName, CertificateTable>(
    "certificate",
    certificateTransitions,
    params.transition,
    {
      current: undefined,
      input: params.input,
      now: params.now,
    },
  );
  if (move.refused !== undefined) return { moved: false, reason: move.refused };
  const result = await trx
    .updateTable("certificate")
    .set({ ...move.set, status: move.to, updated_at: params.now })
    .where("order_id", "=", params.orderId)
    .where("status", "in", move.from)
    .executeTakeFirst();
  if (result.numUpdatedRows !== 1n) {
    const current = await findCertificate(trx, params.orderId);
    return {
      moved: false,
      reason: current === undefined ? "no certificate for this order" : `the certificate is ${current.status}`,
    };
  }
  return { moved: true, certificate: (await findCertificate(trx, params.orderId)) as Certificate };
}

/**
 * The certificate of a settled order, `awaiting_wallet`; a second call for the
 * same order (a replayed settlement) changes nothing.
 */
export async function createCertificate(
  trx: Kysely<Database>,
  params: { orderId: string; purchaseId: Hex | string; chainId: number; contract: Address; now: number },
): Promise<void> {
  assertInTransaction(trx, "certificate");
  await trx
    .insertInto("certificate")
    .values({
      order_id: params.orderId,
      purchase_id: params.purchaseId,
      status: "awaiting_wallet",
      chain_id: params.chainId,
      contract_address: params.contract.toLowerCase(),
      buyer: null,
      token_id: BigInt(params.purchaseId).toString(),
      voucher_deadline: null,
      mint_transaction_hash: null,
      mint_block_number: null,
      minted_at: null,
      created_at: params.now,
      updated_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function findCertificate(db: Kysely<Database>, orderId: string): Promise<Certificate | undefined> {
  const row = await db.selectFrom("certificate").selectAll().where("order_id", "=", orderId).executeTakeFirst();
  return row === undefined ? undefined : toCertificate(row);
}

export async function certificatesOfOrders(db: Kysely<Database>, orderIds: readonly string[]): Promise<Certificate[]> {
  if (orderIds.length === 0) return [];
  const rows = await db
    .selectFrom("certificate")
    .selectAll()
    .where("order_id", "in", [...orderIds])
    .execute();
  return rows.map(toCertificate);
}

/** Certificates whose mint was seen and awaits its confirmations, oldest change first. */
export async function pendingMints(db: Kysely<Database>, params: { limit: number }): Promise<Certificate[]> {
  const rows = await db
    .selectFrom("certificate")
    .selectAll()
    .where("status", "=", "pending")
    .orderBy("updated_at")
    .limit(params.limit)
    .execute();
  return rows.map(toCertificate);
}

/**
 * Issued vouchers after `afterOrderId` in order id order, leaving out those whose
 * deadline passed before `deadlineAfterSeconds`.
 */
export async function issuedVouchers(
  db: Kysely<Database>,
  params: { afterOrderId: string; deadlineAfterSeconds: number; limit: number },
): Promise<Certificate[]> {
  const rows = await db
    .selectFrom("certificate")
    .selectAll()
    .where("status", "=", "voucher_issued")
    .where("order_id", ">", params.afterOrderId)
    .where((eb) => eb.or([eb("voucher_deadline", "is", null), eb("voucher_deadline", ">=", params.deadlineAfterSeconds)]))
    .orderBy("order_id")
    .limit(params.limit)
    .execute();
  return rows.map(toCertificate);
}
