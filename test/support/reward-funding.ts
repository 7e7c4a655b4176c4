import type { Address, Hex } from "viem";
import type { TestStack } from "./test-stack.js";

/**
 * Sets the partner's reward funding address the only way the service accepts a new one
 * (issue 40): ask for the challenge, have the address sign it, hand both back with the
 * settings. `sign` is the funding wallet's `signMessage`; `apiKey` acts as another partner.
 */
export async function putProvenFundingAddress(
  stack: TestStack,
  params: { address: Address; sign: (message: string) => Promise<Hex>; apiKey?: string; cashbackBps?: number },
): Promise<Response> {
  const headers = params.apiKey === undefined ? undefined : { Authorization: `Bearer ${params.apiKey}` };
  const challenge = await stack.partnerFetch("/v1/rewards/settings/funding-challenge", {
    method: "POST",
    headers,
    json: { fundingAddress: params.address },
  });
  if (challenge.status !== 200) throw new Error(`funding challenge: ${challenge.status} ${await challenge.text()}`);
  const { message } = (await challenge.json()) as { message: string };
  return stack.partnerFetch("/v1/rewards/settings", {
    method: "PUT",
    headers,
    json: {
      fundingAddress: params.address,
      fundingProof: { message, signature: await params.sign(message) },
      ...(params.cashbackBps === undefined ? {} : { cashbackBps: params.cashbackBps }),
    },
  });
}
