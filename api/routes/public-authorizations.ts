import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppContext } from "../app-context.js";
import { authenticateClientToken } from "../checkout/client-tokens.js";
import { AuthorizationBody, RelayAnswerSchema, toSubmission } from "../gasless/authorization-schema.js";
import { submitAuthorization } from "../gasless/submit-authorization.js";
import { CALLERS, declareRoute } from "../http/callers.js";
import { errorResponses } from "../http/openapi-contract.js";
import type { AppEnv } from "./app-env.js";

const route = declareRoute({
  method: "post",
  path: "/sessions/{id}/authorizations",
  security: CALLERS.anyone,
  summary: "Pay without gas: a signed EIP-3009 authorization, relayed by the service (browser)",
  description:
    "The customer's wallet signs `TransferWithAuthorization` with `to` = the session's payment address, `value` = the displayed " +
    "amount, `validBefore` ≤ the session's expiry and a fresh random nonce, against the token's EIP-712 domain " +
    "(`gasless.domain` of the session read). The service checks it, submits `transferWithAuthorization` from its relayer and " +
    "answers the transaction hash; the session then settles from the index as for a plain transfer.",
  request: {
    params: z.object({ id: z.string().max(100) }),
    body: {
      required: true,
      content: { "application/json": { schema: AuthorizationBody.extend({ clientToken: z.string().min(1).max(200) }) } },
    },
  },
  responses: {
    200: { description: "Submitted", content: { "application/json": { schema: RelayAnswerSchema } } },
    ...errorResponses(
      "invalid_client_token",
      "not_found",
      "session_expired",
      "session_not_open",
      "gasless_unavailable",
      "authorization_already_submitted",
      "authorization_in_progress",
      "authorization_used",
      "authorization_wrong_network",
      "authorization_wrong_token",
      "authorization_wrong_recipient",
      "authorization_wrong_amount",
      "authorization_wrong_payer",
      "authorization_outlives_session",
      "authorization_not_yet_valid",
      "authorization_expired",
      "authorization_bad_signature",
      "authorization_insufficient_balance",
      "authorization_rejected_on_chain",
      "relayer_out_of_funds",
      "relay_failed",
      "rate_limited",
    ),
  },
});

/** `POST /v1/public/checkout/sessions/:id/authorizations` (docs/gasless.md). */
export function publicAuthorizationRoutes(context: AppContext) {
  return new OpenAPIHono<AppEnv>().openapi(route, async (c) => {
    const body = c.req.valid("json");
    const session = await authenticateClientToken(context.store, {
      sessionId: c.req.valid("param").id,
      clientToken: body.clientToken,
      use: "write",
    });
    return c.json(await submitAuthorization(context, { session, submission: toSubmission(body) }), 200);
  });
}
