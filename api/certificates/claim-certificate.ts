import { type Address, encodeFunctionData, getAddress, type Hex } from "viem";
import { certificateNftAbi } from "../../contracts/generated/index.js";
import type { AppContext } from "../app-context.js";
import { getSession } from "../checkout/session-record.js";
import { problem } from "../http/problem.js";
import { findOrder, getOrder } from "../orders/order-record.js";
import { fullyRefundedOrderIds } from "../refunds/refund-record.js";
import { findCertificate, transitionCertificate } from "./certificate-record.js";
import { type CertificateVoucher, signCertificateVoucher } from "./voucher-typed-data.js";

/** A voucher is good for one hour: long enough to sign, short enough that a leaked one soon dies. */
const VOUCHER_LIFETIME_SECONDS = 3_600;

const notAvailable = (reason: string, detail: string) => problem("certificate_not_available", detail, { reason });

export type CertificateClaim = {
  voucher: { buyer: Address; purchaseId: Hex; tokenURI: string; deadline: string };
  signature: Hex;
  contract: { address: Address; chainId: number };
  transaction: { to: Address; data: Hex; chainId: number };
};

/**
 * Issues a signed EIP-712 voucher for a settled purchase's certificate, bound to
 * the wallet that will send the mint (the contract requires msg.sender == buyer).
 * Asking again (another wallet, an expired voucher) issues a new one until a mint
 * is seen; the contract mints at most one certificate per purchase.
 */
export async function claimCertificate(
  context: AppContext,
  params: { orderId: string; walletAddress: Address; now?: number },
): Promise<CertificateClaim> {
  const now = params.now ?? Date.now();
  const certificate = await findCertificate(context.store, params.orderId);
  if (certificate === undefined) {
    const order = await findOrder(context.store, params.orderId);
    throw order?.status === "awaiting_payment" || order === undefined
      ? notAvailable("not_settled", "The purchase is not settled yet; a certificate can be claimed once it is.")
      : notAvailable("certificate_disabled", "This purchase does not include a certificate.");
  }
  // A fully refunded order's certificate is revoked (docs/refunds.md): nothing to claim any more.
  if ((await fullyRefundedOrderIds(context.store, [params.orderId])).size > 0) {
    throw problem(
      "certificate_revoked",
      "This purchase was fully refunded: its certificate is revoked and can no longer be claimed.",
    );
  }
  if (certificate.status === "minted" || certificate.status === "pending") {
    throw notAvailable(
      certificate.status === "minted" ? "already_minted" : "mint_pending",
      "The certificate of this purchase has already been minted.",
    );
  }
  if (context.settings.voucherPrivateKey === undefined) {
    throw problem("voucher_key_missing", "The service has no voucher key.");
  }

  // A certificate exists only for a settled order: its settling session names the product.
  const order = await getOrder(context.store, params.orderId);
  if (order.settledSessionId === null) throw new Error(`order ${order.id} has a certificate but no settled session`);
  const session = await getSession(context.store, order.settledSessionId);
  const contract = certificate.contract;
  const voucher: CertificateVoucher = {
    buyer: getAddress(params.walletAddress),
    purchaseId: certificate.purchaseId,
    tokenURI: certificateMetadataUri({
      productName: session.productName,
      purchaseId: certificate.purchaseId,
      chainId: certificate.chainId,
    }),
    deadline: BigInt(Math.floor(now / 1000) + VOUCHER_LIFETIME_SECONDS),
  };
  const signature = await signCertificateVoucher({
    privateKey: context.settings.voucherPrivateKey,
    chainId: certificate.chainId,
    contract,
    voucher,
  });
  const issued = await context.store.transaction().execute((trx) =>
    transitionCertificate(trx, {
      orderId: params.orderId,
      transition: "issueVoucher",
      input: { buyer: voucher.buyer, deadlineSeconds: voucher.deadline },
      now,
    }),
  );
  // A mint seen between the read above and this write: the voucher is of no use any more.
  if (!issued.moved) throw notAvailable("mint_pending", "The certificate of this purchase has already been minted.");
  return {
    voucher: { ...voucher, deadline: voucher.deadline.toString() },
    signature,
    contract: { address: contract, chainId: certificate.chainId },
    transaction: {
      to: contract,
      data: encodeFunctionData({ abi: certificateNftAbi, functionName: "claim", args: [voucher, signature] }),
      chainId: certificate.chainId,
    },
  };
}

/** On-chain metadata carries no personal data: product, purchase and network only. */
function certificateMetadataUri(params: { productName: string; purchaseId: string; chainId: number }): string {
  const metadata = {
    name: `Certificate of purchase: ${params.productName}`,
    description: "Non-transferable certificate of a purchase settled in USDC.",
    attributes: [
      { trait_type: "purchaseId", value: params.purchaseId },
      { trait_type: "chainId", value: params.chainId },
    ],
  };
  return `data:application/json;base64,${Buffer.from(JSON.stringify(metadata)).toString("base64")}`;
}
