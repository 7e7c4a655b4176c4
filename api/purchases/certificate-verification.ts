import { type Address, type Hex, isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import { certificatesOfOrders } from "../certificates/certificate-record.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import type { IndexedCertificateMint } from "../indexed/indexed-chain.js";
import { ordersOfPurchaseIds } from "../orders/order-record.js";
import { purchaseIdsPaidBy } from "../payments/payment-record.js";
import { fullyRefundedOrderIds } from "../refunds/refund-record.js";
import { checksum } from "../values/checksum-address.js";
import { offeringsOfOrders } from "./purchase-record.js";

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
 * burned by the issuer of certificates, or its order was fully refunded. `mismatch`: on chain but not what our
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
    ordersOfPurchaseIds(context.store, purchaseIds),
  ]);
  const orderIds = orders.map((order) => order.id);
  const [certificates, offerings, refunded] = await Promise.all([
    certificatesOfOrders(context.store, orderIds),
    offeringsOfOrders(context.store, orderIds),
    // A fully refunded order's certificate is revoked (docs/refunds.md).
    fullyRefundedOrderIds(context.store, orderIds),
  ]);

  return mints.map((mint) => {
    const network = context.networks.find((candidate) => candidate.chainId === mint.chainId);
    const head = heads.get(mint.chainId)?.blockNumber ?? mint.blockNumber;
    const confirmations = confirmationsOf(mint, head);
    const order = orders.find((candidate) => candidate.purchaseId === mint.purchaseId);
    const certificate = certificates.find((candidate) => candidate.orderId === order?.id);
    const bought = offerings.find((candidate) => candidate.orderId === order?.id);
    const matches =
      network?.certificate !== undefined &&
      isAddressEqual(network.certificate, mint.contract) &&
      order !== undefined &&
      order.status !== "awaiting_payment" &&
      mint.tokenId === BigInt(mint.purchaseId) &&
      (certificate?.buyer == null || isAddressEqual(certificate.buyer, mint.buyer));
    const status =
      revoked.has(mint.purchaseId) || (order !== undefined && refunded.has(order.id))
        ? "revoked"
        : !matches
          ? "mismatch"
          : confirmations < (network?.confirmations ?? 1)
            ? "pending"
            : "valid";
    return {
      status,
      chainId: mint.chainId,
      contract: checksum(mint.contract),
      tokenId: mint.tokenId.toString(),
      owner: checksum(mint.buyer),
      purchaseId: mint.purchaseId,
      offering: bought === undefined ? null : { id: bought.offeringId, name: bought.offeringName, issuer: bought.issuerName },
      mint: { transactionHash: mint.transactionHash, blockNumber: mint.blockNumber.toString(), confirmations },
    };
  });
}

export async function verifyTokenId(context: Pick<AppContext, "store" | "indexed" | "networks">, tokenId: bigint) {
  return assessMints(context, await context.indexed.certificateMints({ tokenId }));
}

/** A mint transaction, or the payment transaction of a purchase whose certificate was minted. */
export async function verifyTransaction(context: Pick<AppContext, "store" | "indexed" | "networks">, transactionHash: Hex) {
  const mints = await context.indexed.certificateMints({ transactionHash });
  if (mints.length > 0) return assessMints(context, mints);
  const purchaseIds = await purchaseIdsPaidBy(context.store, transactionHash);
  if (purchaseIds.length === 0) return [];
  return assessMints(context, await context.indexed.certificateMints({ purchaseIds }));
}

export async function verifyWallet(context: Pick<AppContext, "store" | "indexed" | "networks">, address: Address) {
  return assessMints(context, await context.indexed.certificateMints({ buyer: address }));
}
