import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../../app-context.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { listUnknownClaims } from "../../rewards/unknown-claims.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import type { AppEnv } from "../app-env.js";
import { jsonResponse, problemResponses } from "./schemas.js";

const UnknownClaimSchema = z.object({
  chainId: z.number().int(),
  transactionHash: z.string(),
  logIndex: z.number().int(),
  contract: z.string(),
  onchainRewardId: z.string(),
  funder: z.string(),
  recipient: z.string(),
  token: z.string(),
  amount: z.string(),
  blockNumber: z.string(),
  reason: z.string().openapi({ description: "unknown_reward, reward_mismatch, or reward_<status> (revoked, expired, granted)" }),
  rewardId: z.string().nullable(),
  seenAt: z.string(),
});

/** `/api/admin/reward-claims`: claims the distributors paid that match no reward expecting one (docs/rewards.md). */
export function adminRewardRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>().openapi(
    declareRoute({
      method: "get",
      path: "/",
      tags: ["Admin portal"],
      summary: "Reward claims seen on chain for no known reward (or for one not expecting a claim), newest first",
      security: CALLERS.admin,
      request: { query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }) },
      responses: { 200: jsonResponse("Unknown claims", z.object({ data: z.array(UnknownClaimSchema) })), ...problemResponses },
    }),
    async (c) => {
      const claims = await listUnknownClaims(context.store, { limit: c.req.valid("query").limit });
      const data = claims.map((claim) => ({
        chainId: claim.chainId,
        transactionHash: claim.transactionHash,
        logIndex: claim.logIndex,
        contract: claim.contract,
        onchainRewardId: claim.onchainId,
        funder: claim.funder,
        recipient: claim.recipient,
        token: claim.token,
        amount: claim.amount.toString(),
        blockNumber: claim.blockNumber.toString(),
        reason: claim.reason,
        rewardId: claim.rewardId,
        seenAt: new Date(claim.seenAt).toISOString(),
      }));
      return c.json({ data }, 200);
    },
  );
}
