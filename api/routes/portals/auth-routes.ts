import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getAddress } from "viem";
import type { AppContext } from "../../app-context.js";
import type { PortalSettings } from "../../config/option-types.js";
import { CALLERS, declareRoute } from "../../http/callers.js";
import { errorResponses } from "../../http/openapi-contract.js";
import { problem, problems } from "../../http/problem.js";
import { isLoopbackHost } from "../../http/same-origin.js";
import { assertMayUsePortal } from "../../sign-in/portal-access.js";
import type { PortalVariables } from "../../sign-in/portal-auth.js";
import { completeSignIn, signOut } from "../../sign-in/sign-in.js";
import { checkSignedChallenge, issueChallenge, type SignInOrigin } from "../../sign-in/siwe-challenge.js";
import type { PortalRole } from "../../store/portal-tables.js";
import type { AppEnv } from "../app-env.js";
import { AddressSchema, jsonBody, jsonResponse, PORTAL_PROBLEM_CODES, problemResponses, SignatureSchema } from "./schemas.js";

/** What the challenge route answers beyond the portals' family: an unknown chain, no configured domain. */
const challengeProblems = errorResponses(
  ...PORTAL_PROBLEM_CODES,
  "unsupported_chain",
  "portal_domain_not_configured",
  "cross_origin_refused",
);

/**
 * What the verify route answers beyond the portals' family: each way a signed challenge
 * is refused (api/sign-in/siwe-challenge.ts), so a client can branch on the code.
 */
const verifyProblems = errorResponses(
  ...PORTAL_PROBLEM_CODES,
  "invalid_challenge",
  "challenge_used",
  "challenge_expired",
  "message_altered",
  "wrong_domain",
  "wrong_uri",
  "wrong_chain",
  "wrong_address",
  "invalid_signature",
  "signature_check_unavailable",
  "portal_domain_not_configured",
  "cross_origin_refused",
);

const ChallengeBody = z.object({
  address: AddressSchema,
  chainId: z
    .number()
    .int()
    .positive()
    .optional()
    .openapi({ description: "Chain the sign-in is bound to; default: the first enabled network" }),
});
const ChallengeSchema = z.object({
  message: z.string().openapi({ description: "EIP-4361 message to sign unchanged (personal_sign)" }),
  nonce: z.string(),
  expiresAt: z.string(),
});
const VerifyBody = z.object({ message: z.string().min(1).max(4096), signature: SignatureSchema });
const SessionSchema = z.object({
  token: z.string().openapi({ description: "Opaque bearer token; send as `Authorization: Bearer <token>`" }),
  expiresAt: z.string(),
  role: z.enum(["investor", "issuer", "admin", "partner"]),
  address: z.string(),
});
const CurrentSessionSchema = SessionSchema.omit({ token: true });

/**
 * Which origin a wallet signs in to. With PUBLIC_BASE_URL set, its host: a request
 * cannot choose it. Without it only in local mode, from the request's Host header, and
 * only a loopback name (issue 40): through DNS rebinding a page on another name reaches
 * us as that name, and its challenge would name its own domain, the one the wallet shows
 * beside it. Anywhere else we refuse, because a Host chosen by the caller would let a
 * phishing site obtain challenges naming its own domain.
 */
export function signInOrigin(c: Context, settings: AppContext["settings"], role: PortalRole): SignInOrigin {
  if (settings.publicBaseUrl !== undefined) {
    return { domain: new URL(settings.publicBaseUrl).host, uri: `${settings.publicBaseUrl}/api/${role}` };
  }
  if (!settings.localMode) {
    throw problem(
      "portal_domain_not_configured",
      "Set PUBLIC_BASE_URL to the service's public origin; sign-in messages are bound to its domain.",
    );
  }
  const host = c.req.header("Host");
  if (host === undefined || host === "") throw problems.invalidRequest("The request has no Host header.");
  if (!isLoopbackHost(host))
    throw problem(
      "cross_origin_refused",
      "In local mode sign in at http://localhost:<port> or http://127.0.0.1:<port>, or set PUBLIC_BASE_URL.",
    );
  return { domain: host, uri: `${new URL(c.req.url).protocol}//${host}/api/${role}` };
}

/** `/api/<role>/auth/*`: Sign-In with Ethereum for one portal. */
export function authRoutes(context: AppContext, portal: PortalSettings, role: PortalRole) {
  const tag = `${role[0]?.toUpperCase()}${role.slice(1)} portal: sign-in`;
  /** Sign-out and the current session: a session of this portal. */
  const ownPortal = role === "partner" ? CALLERS.member : CALLERS[role];
  return new OpenAPIHono<AppEnv & { Variables: PortalVariables }>()
    .openapi(
      declareRoute({
        method: "post",
        path: "/challenge",
        security: CALLERS.anyone,
        tags: [tag],
        summary: `Ask for a sign-in message (EIP-4361) for the ${role} portal`,
        request: { body: jsonBody(ChallengeBody) },
        responses: { 200: jsonResponse("The message to sign", ChallengeSchema), ...challengeProblems },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const chainId = body.chainId ?? context.networks[0]?.chainId;
        if (chainId === undefined || !context.networks.some((network) => network.chainId === chainId)) {
          throw problem(
            "unsupported_chain",
            `Enabled chain ids: ${context.networks.map((network) => network.chainId).join(", ")}.`,
          );
        }
        await assertMayUsePortal(context.store, context.settings, { role, address: body.address });
        const challenge = await issueChallenge(context.store, {
          portal: role,
          address: body.address,
          chainId,
          origin: signInOrigin(c, context.settings, role),
          ttlSeconds: portal.challengeTtlSeconds,
        });
        return c.json({ ...challenge, expiresAt: new Date(challenge.expiresAt).toISOString() }, 200);
      },
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/verify",
        security: CALLERS.anyone,
        tags: [tag],
        summary: `Exchange the signed message for a ${role} session`,
        request: { body: jsonBody(VerifyBody) },
        responses: { 200: jsonResponse("A session", SessionSchema), ...verifyProblems },
      }),
      async (c) => {
        const body = c.req.valid("json");
        const challenge = await checkSignedChallenge(context, {
          portal: role,
          message: body.message,
          signature: body.signature,
          origin: signInOrigin(c, context.settings, role),
          ttlSeconds: portal.challengeTtlSeconds,
        });
        const { token, session: created } = await completeSignIn(context.store, context.settings, {
          challenge,
          sessionTtlSeconds: portal.sessionTtlSeconds,
        });
        return c.json(
          {
            token,
            expiresAt: new Date(created.expiresAt).toISOString(),
            role: created.role,
            address: getAddress(created.address),
          },
          200,
        );
      },
    )
    .openapi(
      declareRoute({
        method: "post",
        path: "/logout",
        tags: [tag],
        summary: "Revoke this session",
        security: ownPortal,
        responses: { 204: { description: "Signed out" }, ...problemResponses },
      }),
      async (c) => {
        await signOut(context.store, c.get("portalSession"));
        return c.body(null, 204);
      },
    )
    .openapi(
      declareRoute({
        method: "get",
        path: "/session",
        tags: [tag],
        summary: "The current session",
        security: ownPortal,
        responses: { 200: jsonResponse("The session", CurrentSessionSchema), ...problemResponses },
      }),
      (c) => {
        const current = c.get("portalSession");
        return c.json(
          { role: current.role, address: getAddress(current.address), expiresAt: new Date(current.expiresAt).toISOString() },
          200,
        );
      },
    );
}
