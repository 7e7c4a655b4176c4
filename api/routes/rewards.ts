import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Address, type Hex, isAddress } from "viem";
import type { AppContext } from "../app-context.js";
import { authenticateClientToken } from "../checkout/client-tokens.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import { problem } from "../http/problem.js";
import type { PartnerVariables } from "../partners/partner-auth.js";
import { claimReward } from "../rewards/claim-reward.js";
import { issueFundingChallenge } from "../rewards/funding-proof.js";
import { grantReward } from "../rewards/grant-reward.js";
import { fundRewardsWithTestAccount } from "../rewards/local-funding.js";
import { revokeReward } from "../rewards/revoke-reward.js";
import { findPartnerReward, findReward, partnerRewardsPage, REWARD_STATUSES } from "../rewards/reward-record.js";
import { readRewardSettings, writeRewardSettings } from "../rewards/reward-settings-view.js";
import { rewardView } from "../rewards/reward-view.js";
import type { AppEnv } from "./app-env.js";

const json = <schema extends z.ZodType>(schema: schema) => ({ required: true, content: { "application/json": { schema } } });
const ok = <schema extends z.ZodType>(_status: 200, description: string, schema: schema) => ({
  200: { description, content: { "application/json": { schema } } },
});
const created = <schema extends z.ZodType>(description: string, schema: schema) => ({
  201: { description, content: { "application/json": { schema } } },
});
const addressInput = z.string().refine((value): value is Address => isAddress(value, { strict: false }), "an address");
const baseUnits = z
  .string()
  .regex(/^[1-9]\d{0,30}$/, "a positive whole number of USDC base units, as a decimal string")
  .openapi({ example: "1500000" });

export const RewardSchema = z
  .object({
    id: z.string().openapi({ example: "rw_5f1c…" }),
    status: z.enum(REWARD_STATUSES),
    orderId: z.string(),
    externalOrderId: z.string(),
    amount: z.string().openapi({ description: "USDC base units" }),
    recipient: z.string().nullable(),
    transactionHash: z.string().nullable(),
    expiresAt: z.string(),
    source: z.enum(["grant", "cashback"]),
    chainId: z.number().int(),
    voucherDeadline: z.string().nullable(),
    revokedReason: z.string().nullable(),
    claimedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("Reward");

export const RewardSettingsSchema = z
  .object({
    fundingAddress: z.string().nullable(),
    fundingProven: z
      .boolean()
      .openapi({ description: "Whether the funding address proved it is yours; an unproven one pays no reward" }),
    fundingProvenAt: z.string().nullable(),
    cashbackBps: z.number().int(),
    distributor: z.object({ address: z.string(), chainId: z.number().int() }).nullable(),
    token: z
      .string()
      .nullable()
      .openapi({ description: "The USDC contract rewards are paid in (approve the distributor on it)" }),
    allowance: z
      .string()
      .nullable()
      .openapi({ description: "The funding address's allowance to the distributor (null without one)" }),
    balance: z.string().nullable(),
    outstanding: z.string().openapi({ description: "Rewards not yet paid, revoked or expired" }),
    warnings: z.array(z.enum(["allowance_below_outstanding", "balance_below_outstanding"])),
  })
  .openapi("RewardSettings");

const RewardParam = z.object({ rewardId: z.string().max(100) });

const settingsRead = declareRoute({
  method: "get",
  path: "/settings",
  summary: "Reward settings: funding address, automatic cashback, allowance, balance and outstanding rewards",
  security: CALLERS.partnerRead,
  responses: { ...ok(200, "The settings", RewardSettingsSchema), ...errorResponses("rpc_unavailable") },
});
const settingsWrite = declareRoute({
  method: "put",
  path: "/settings",
  summary: "Change the reward settings (partial: a field left out keeps its value)",
  security: CALLERS.partnerAdminChange,
  request: {
    body: json(
      z
        .object({
          fundingAddress: addressInput.optional(),
          fundingProof: z
            .object({
              message: z.string().min(1).max(2_000),
              signature: z
                .string()
                .regex(/^0x[0-9a-fA-F]*$/, "a hex signature")
                .max(20_000),
            })
            .strict()
            .optional()
            .openapi({
              description:
                "A new funding address's proof: the message of POST /v1/rewards/settings/funding-challenge, signed by that address",
            }),
          cashbackBps: z.number().int().min(0).max(10_000).optional(),
        })
        .strict(),
    ),
  },
  responses: {
    ...ok(200, "The settings", RewardSettingsSchema),
    ...errorResponses(
      "invalid_request",
      "invalid_funding_address",
      "invalid_funding_proof",
      "funding_address_taken",
      "signature_check_unavailable",
      "rpc_unavailable",
    ),
  },
});
const fundingChallenge = declareRoute({
  method: "post",
  path: "/settings/funding-challenge",
  summary: "The message a funding address signs to prove it is yours (single use, valid 10 minutes)",
  security: CALLERS.partnerAdminChange,
  request: { body: json(z.object({ fundingAddress: addressInput }).strict()) },
  responses: {
    ...ok(200, "The challenge", z.object({ message: z.string(), expiresAt: z.string() }).openapi("RewardFundingChallenge")),
    ...errorResponses("invalid_request", "rewards_unavailable"),
  },
});
const testFundRoute = declareRoute({
  method: "post",
  path: "/settings/test-fund",
  summary:
    "Local mode only: make the local test funder (Anvil account 5) your proven funding address and approve the distributor from it",
  security: CALLERS.partnerAdminChange,
  request: { body: json(z.object({ allowance: baseUnits }).strict()) },
  responses: {
    ...ok(
      200,
      "Proven, approved and mined; the settings read afresh",
      z.object({ transactionHash: z.string(), settings: RewardSettingsSchema }),
    ),
    ...errorResponses("invalid_request", "local_mode_only", "rewards_unavailable", "funding_address_taken"),
  },
});

const listRoute = declareRoute({
  method: "get",
  path: "/",
  summary: "The partner's rewards, newest first",
  security: CALLERS.partnerRead,
  request: {
    query: z.object({
      orderId: z.string().max(100).optional(),
      status: z.enum(REWARD_STATUSES).optional(),
      cursor: z.string().max(200).optional(),
      limit: z.coerce.number().int().min(1).max(100).default(20),
    }),
  },
  responses: {
    ...ok(200, "A page of rewards", z.object({ data: z.array(RewardSchema), nextCursor: z.string().nullable() })),
    ...errorResponses("invalid_request", "invalid_cursor"),
  },
});
const readRoute = declareRoute({
  method: "get",
  path: "/{rewardId}",
  summary: "Read a reward",
  security: CALLERS.partnerRead,
  request: { params: RewardParam },
  responses: { ...ok(200, "The reward", RewardSchema), ...errorResponses("not_found") },
});
const revokeRoute = declareRoute({
  method: "post",
  path: "/{rewardId}/revoke",
  summary: "Revoke a reward nothing is paying (with a voucher out: only after its deadline)",
  security: CALLERS.partnerAdminChange,
  request: {
    params: RewardParam,
    body: {
      required: false,
      content: { "application/json": { schema: z.object({ reason: z.string().min(1).max(200).optional() }).strict() } },
    },
  },
  responses: { ...ok(200, "The revoked reward", RewardSchema), ...errorResponses("not_found", "reward_not_revocable") },
});

/** `/v1/rewards` (and the console's `/api/partner/rewards`): settings and their funding proof, list, read, revoke. */
export function rewardRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>()
    .openapi(settingsRead, async (c) => c.json(await readRewardSettings(context, c.get("partner").id), 200))
    .openapi(settingsWrite, async (c) => {
      const body = c.req.valid("json");
      return c.json(
        await writeRewardSettings(context, {
          partnerId: c.get("partner").id,
          ...body,
          fundingProof: body.fundingProof && {
            message: body.fundingProof.message,
            signature: body.fundingProof.signature as Hex,
          },
        }),
        200,
      );
    })
    .openapi(fundingChallenge, async (c) =>
      c.json(
        await issueFundingChallenge(context, {
          partnerId: c.get("partner").id,
          fundingAddress: c.req.valid("json").fundingAddress,
        }),
        200,
      ),
    )
    .openapi(testFundRoute, async (c) =>
      c.json(
        await fundRewardsWithTestAccount(context, {
          partnerId: c.get("partner").id,
          allowance: BigInt(c.req.valid("json").allowance),
        }),
        200,
      ),
    )
    .openapi(listRoute, async (c) => {
      const query = c.req.valid("query");
      const page = await partnerRewardsPage(context.store, { partnerId: c.get("partner").id, ...query });
      return c.json({ data: page.data.map(rewardView), nextCursor: page.nextCursor }, 200);
    })
    .openapi(readRoute, async (c) => {
      const reward = await findPartnerReward(context.store, {
        partnerId: c.get("partner").id,
        id: c.req.valid("param").rewardId,
      });
      if (reward === undefined) throw problem("not_found", "Reward was not found");
      return c.json(rewardView(reward), 200);
    })
    .openapi(revokeRoute, async (c) => {
      const reward = await revokeReward(context, {
        partnerId: c.get("partner").id,
        rewardId: c.req.valid("param").rewardId,
        reason: c.req.valid("json")?.reason,
      });
      return c.json(rewardView(reward), 200);
    });
}

const grantRoute = declareRoute({
  method: "post",
  path: "/{orderId}/rewards",
  summary: "Grant a reward (USDC cashback) on a settled order; idempotent on idempotencyKey",
  security: CALLERS.partnerAdminChange,
  request: {
    params: z.object({ orderId: z.string().max(100) }),
    body: json(z.object({ amount: baseUnits, idempotencyKey: z.string().min(1).max(255) }).strict()),
  },
  responses: {
    ...created("The reward (a replay answers the same reward, 201 again)", RewardSchema),
    ...errorResponses(
      "invalid_request",
      "not_found",
      "rewards_not_configured",
      "reward_order_not_settled",
      "reward_exceeds_amount_paid",
      "idempotency_conflict",
      "rewards_unavailable",
    ),
  },
});

/** `POST /v1/orders/:orderId/rewards`, mounted beside the order routes (their authentication applies). */
export function orderRewardRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv & { Variables: PartnerVariables }>().openapi(grantRoute, async (c) => {
    const body = c.req.valid("json");
    const { reward } = await grantReward(context, {
      partnerId: c.get("partner").id,
      orderId: c.req.valid("param").orderId,
      amount: BigInt(body.amount),
      idempotencyKey: body.idempotencyKey,
    });
    return c.json(rewardView(reward), 201);
  });
}

const ClaimAnswerSchema = z
  .union([
    z.object({
      voucher: z.object({
        rewardId: z.string(),
        funder: z.string(),
        recipient: z.string(),
        token: z.string(),
        amount: z.string(),
        deadline: z.string(),
      }),
      signature: z.string(),
      contract: z.object({ address: z.string(), chainId: z.number().int() }),
      transaction: z.object({ to: z.string(), data: z.string(), chainId: z.number().int() }),
    }),
    z.object({ transactionHash: z.string() }),
  ])
  .openapi("RewardClaim");

const publicClaimRoute = declareRoute({
  method: "post",
  path: "/{rewardId}/claim",
  security: CALLERS.anyone,
  summary: "Claim a reward (browser): the voucher and ready-to-send transaction, or with gasless the relayed transaction's hash",
  request: {
    params: RewardParam,
    body: json(
      z
        .object({ clientToken: z.string().min(1).max(200), walletAddress: addressInput, gasless: z.boolean().optional() })
        .strict(),
    ),
  },
  responses: {
    ...ok(200, "The voucher and transaction, or the relayed transaction's hash", ClaimAnswerSchema),
    ...errorResponses(
      "invalid_request",
      "invalid_client_token",
      "session_expired",
      "not_found",
      "reward_not_claimable",
      "reward_unfunded",
      "rewards_not_configured",
      "relay_amount_too_small",
      "rewards_unavailable",
      "gasless_unavailable",
      "relayer_out_of_funds",
      "relay_failed",
      "rpc_unavailable",
      "rate_limited",
    ),
  },
});

const publicReadRoute = declareRoute({
  method: "post",
  path: "/{rewardId}",
  security: CALLERS.anyone,
  summary: "Read a reward of one's own order (browser; the client token rides in the body)",
  request: { params: RewardParam, body: json(z.object({ clientToken: z.string().min(1).max(200) }).strict()) },
  responses: {
    ...ok(200, "The reward", RewardSchema),
    ...errorResponses("invalid_client_token", "session_expired", "not_found"),
  },
});

/** `/v1/public/rewards`: the customer's browser, authenticated by the checkout session's client token. */
export function publicRewardRoutes(context: AppContext) {
  /** The reward of the order the client token's session belongs to; any other reward is "not found". */
  const ownReward = async (rewardId: string, clientToken: string) => {
    const session = await authenticateClientToken(context.store, { clientToken, use: "claim" });
    const reward = await findReward(context.store, rewardId);
    if (reward === undefined || reward.orderId !== session.orderId || reward.partnerId !== session.partnerId) {
      throw problem("not_found", "Reward was not found");
    }
    return reward;
  };
  return new OpenAPIHono<AppEnv>()
    .openapi(publicReadRoute, async (c) => {
      const reward = await ownReward(c.req.valid("param").rewardId, c.req.valid("json").clientToken);
      return c.json(rewardView(reward), 200);
    })
    .openapi(publicClaimRoute, async (c) => {
      const body = c.req.valid("json");
      const reward = await ownReward(c.req.valid("param").rewardId, body.clientToken);
      return c.json(
        await claimReward(context, { reward, walletAddress: body.walletAddress, gasless: body.gasless === true }),
        200,
      );
    });
}
