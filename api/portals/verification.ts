import { type Address, getAddress, type Hex, isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import { certificatesOfOrders } from "../certificates/certificate-record.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedCertificateMint } from "../indexed/indexed-chain.js";

export type CertificateVerification = {
  status: "valid" | "pending" | "revoked" | "mismatch";
  chainId: number;
  contract: Address;
  tokenId: string;
  owner: Address;
  purchaseId: Hex;
  offering: { id: string; name: string; issuer: string } | null;
  mint: { transactionHash: Hex; blockNumber: string; confirmations: number };
};

/**
 * Public verification, answered from indexed chain facts and checked against our
 * records. `valid`: minted by our certificate contract, final, for a settled
 * purchase, to the wallet the voucher named. `pending`: not final yet. `revoked`:
 * burned by the issuer of certificates. `mismatch`: on chain but not what our
 * records say (unknown purchase, other token id, other owner, unpaid order).
 * Only public facts leave here: wallet addresses, ids, offering and issuer names.
 */
export async function assessMints(
  context: Pick<AppContext, "store" | "indexed" | "networks">,
  mints: IndexedCertificateMint[],
): Promise<CertificateVerification[]> {
  if (mints.length === 0) return [];
  const purchaseIds = [...new Set(mints.map((mint) => mint.purchaseId))];
  const [revoked, heads, orders] = await Promise.all([
    context.indexed.revokedPurchaseIds(purchaseIds),
    context.indexed.heads(),
    context.store.selectFrom("orders").select(["id", "purchase_id", "status"]).where("purchase_id", "in", purchaseIds).execute(),
  ]);
  const orderIds = orders.map((order) => order.id);
  const [certificates, rwa] = await Promise.all([
    orderIds.length === 0 ? [] : certificatesOfOrders(context.store, orderIds),
    orderIds.length === 0
      ? []
      : context.store
          .selectFrom("checkout_session")
          .innerJoin("rwa_purchase", "rwa_purchase.session_id", "checkout_session.id")
          .innerJoin("offering", "offering.id", "rwa_purchase.offering_id")
          .innerJoin("issuer", "issuer.id", "offering.issuer_id")
          .select(["checkout_session.order_id", "offering.id as offering_id", "offering.name", "issuer.name as issuer_name"])
          .where("checkout_session.order_id", "in", orderIds)
          .execute(),
  ]);

  return mints.map((mint) => {
    const network = context.networks.find((candidate) => candidate.chainId === mint.chainId);
    const head = heads.get(mint.chainId)?.blockNumber ?? mint.blockNumber;
    const confirmations = confirmationsOf(mint, head);
    const order = orders.find((candidate) => candidate.purchase_id === mint.purchaseId);
    const certificate = certificates.find((candidate) => candidate.orderId === order?.id);
    const purchase = rwa.find((candidate) => candidate.order_id === order?.id);
    const matches =
      network?.certificate !== undefined &&
      network.certificate.toLowerCase() === mint.contract &&
      order !== undefined &&
      order.status !== "awaiting_payment" &&
      mint.tokenId === BigInt(mint.purchaseId) &&
      (certificate?.buyer == null || isAddressEqual(certificate.buyer, mint.buyer));
    const status = revoked.has(mint.purchaseId)
      ? "revoked"
      : !matches
        ? "mismatch"
        : confirmations < (network?.confirmations ?? 1)
          ? "pending"
          : "valid";
    return {
      status,
      chainId: mint.chainId,
      contract: getAddress(mint.contract),
      tokenId: mint.tokenId.toString(),
      owner: getAddress(mint.buyer),
      purchaseId: mint.purchaseId,
      offering: purchase === undefined ? null : { id: purchase.offering_id, name: purchase.name, issuer: purchase.issuer_name },
      mint: { transactionHash: mint.transactionHash, blockNumber: mint.blockNumber.toString(), confirmations },
    };
  });
}

export async function verifyTokenId(context: Pick<AppContext, "store" | "indexed" | "networks">, tokenId: bigint) {
  return assessMints(context, await context.indexed.certificateMints({ tokenId }));
}

/** A mint transaction, or the payment transaction of a purchase whose certificate was minted. */
export async function verifyTransaction(context: Pick<AppContext, "store" | "indexed" | "networks">, transactionHash: Hex) {
  const hash = transactionHash.toLowerCase() as Hex;
  const mints = await context.indexed.certificateMints({ transactionHash: hash });
  if (mints.length > 0) return assessMints(context, mints);
  const paid = await context.store
    .selectFrom("payment")
    .innerJoin("checkout_session", "checkout_session.id", "payment.session_id")
    .innerJoin("orders", "orders.id", "checkout_session.order_id")
    .select("orders.purchase_id")
    .where("payment.transaction_hash", "=", hash)
    .where("payment.status", "=", "settled")
    .execute();
  if (paid.length === 0) return [];
  return assessMints(context, await context.indexed.certificateMints({ purchaseIds: paid.map((row) => row.purchase_id as Hex) }));
}

export async function verifyWallet(context: Pick<AppContext, "store" | "indexed" | "networks">, address: Address) {
  return assessMints(context, await context.indexed.certificateMints({ buyer: address.toLowerCase() as Address }));
}
