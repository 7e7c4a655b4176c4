import { checksum } from "../checksum-address.js";
import type { NetworkConfig } from "../config/networks.js";
import { USDC_DECIMALS } from "../money.js";
import type { CheckoutSessionTable } from "../store/database.js";

/** EIP-681 payment link: `ethereum:<token>@<chainId>/transfer?address=<recipient>&uint256=<amount>`. */
export function eip681Uri(params: { token: string; chainId: number; recipient: string; amount: string }): string {
  return `ethereum:${params.token}@${params.chainId}/transfer?address=${params.recipient}&uint256=${params.amount}`;
}

export function paymentView(session: CheckoutSessionTable) {
  return {
    token: "USDC" as const,
    tokenAddress: checksum(session.token_address),
    recipient: checksum(session.payment_address),
    amount: session.amount_due,
    totalPriceUsdc: session.total_price_usdc,
    decimals: USDC_DECIMALS as 6,
    uri: eip681Uri({
      token: checksum(session.token_address),
      chainId: session.chain_id,
      recipient: checksum(session.payment_address),
      amount: session.amount_due,
    }),
  };
}

/** The session as the partner backend and the hosted checkout see it (never a token). */
export function sessionView(
  session: CheckoutSessionTable,
  extra: { orderId: string; purchaseId: string; network?: NetworkConfig },
) {
  return {
    id: session.id,
    status: session.status,
    expiresAt: new Date(Number(session.expires_at)).toISOString(),
    network: session.network,
    chainId: session.chain_id,
    externalOrderId: session.external_order_id,
    orderId: extra.orderId,
    purchaseId: extra.purchaseId,
    product: {
      externalProductId: session.external_product_id,
      name: session.product_name,
      category: session.product_category,
      quantity: session.quantity,
    },
    shippingRequired: session.shipping_required === 1,
    certificate: { enabled: session.certificate_enabled === 1 },
    payment: paymentView(session),
    createdAt: new Date(Number(session.created_at)).toISOString(),
  };
}
