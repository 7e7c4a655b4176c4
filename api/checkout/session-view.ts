import type { NetworkConfig } from "../config/networks.js";
import { USDC_DECIMALS } from "../values/money.js";
import type { CheckoutSession } from "./session-record.js";

/** EIP-681 payment link: `ethereum:<token>@<chainId>/transfer?address=<recipient>&uint256=<amount>`. */
export function eip681Uri(params: { token: string; chainId: number; recipient: string; amount: string }): string {
  return `ethereum:${params.token}@${params.chainId}/transfer?address=${params.recipient}&uint256=${params.amount}`;
}

export function paymentView(session: CheckoutSession) {
  return {
    token: "USDC" as const,
    tokenAddress: session.tokenAddress,
    recipient: session.paymentAddress,
    amount: session.amountDue.toString(),
    totalPriceUsdc: session.totalPriceUsdc.toString(),
    decimals: USDC_DECIMALS as 6,
    uri: eip681Uri({
      token: session.tokenAddress,
      chainId: session.chainId,
      recipient: session.paymentAddress,
      amount: session.amountDue.toString(),
    }),
  };
}

/** The session as the partner backend and the hosted checkout see it (never a token). */
export function sessionView(session: CheckoutSession, extra: { orderId: string; purchaseId: string; network?: NetworkConfig }) {
  return {
    id: session.id,
    status: session.status,
    expiresAt: new Date(session.expiresAt).toISOString(),
    network: session.network,
    chainId: session.chainId,
    externalOrderId: session.externalOrderId,
    orderId: extra.orderId,
    purchaseId: extra.purchaseId,
    product: {
      externalProductId: session.externalProductId,
      name: session.productName,
      category: session.productCategory,
      quantity: session.quantity,
    },
    shippingRequired: session.shippingRequired,
    certificate: { enabled: session.certificateEnabled },
    payment: paymentView(session),
    createdAt: new Date(session.createdAt).toISOString(),
  };
}
