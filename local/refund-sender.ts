import type { Address, Hex } from "viem";
import type { LocalJson } from "./local-stack.js";

/** Why a refund of the local stack was not sent: shown to the developer as it is. */
export class RefundNotSent extends Error {}

/**
 * Sends a `ready` refund of the local stack (local or fork mode) as the shop would: the
 * exact `instructions.transaction` of the refund, from its payment address. It asks the
 * service's local-only route `POST /v1/refunds/<id>/test-send`, the one domain function
 * behind the console's "Send with the test account" and `npm run refund`
 * (api/refunds/test-account-send.ts). The service then proves the refund from the
 * index, as for any wallet. Used by the `refund` scenario of `npm run simulate`.
 */
export async function sendReadyRefund(params: { local: LocalJson; refundId: string }): Promise<{ hash: Hex; from: Address }> {
  const { local, refundId } = params;
  const response = await fetch(`${local.baseUrl}/v1/refunds/${encodeURIComponent(refundId)}/test-send`, {
    method: "POST",
    headers: { Authorization: `Bearer ${local.partner.apiKey}`, "Content-Type": "application/json" },
    body: "{}",
  });
  const answer = (await response.json()) as {
    transactionHash?: Hex;
    refund?: { instructions: { from: Address } | null };
    code?: string;
    detail?: string;
    refundStatus?: string;
  };
  if (!response.ok) {
    throw new RefundNotSent(
      answer.code === "refund_not_ready"
        ? `refund ${refundId} is ${answer.refundStatus}: only a ready refund (its address set) can be sent (${answer.detail})`
        : `refused (${response.status}): ${answer.code}: ${answer.detail}`,
    );
  }
  return { hash: answer.transactionHash as Hex, from: answer.refund?.instructions?.from as Address };
}
