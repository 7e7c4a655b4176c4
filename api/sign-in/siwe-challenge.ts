import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { getAddress, type Hex, isAddressEqual } from "viem";
import { createSiweMessage, parseSiweMessage, verifySiweMessage } from "viem/siwe";
import type { AppContext } from "../app-context.js";
import { type ProblemCode, ProblemError, problem } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { PortalChallengeTable, PortalRole } from "../store/portal-tables.js";

/** The origin a challenge is bound to: `domain` is the EIP-4361 authority, `uri` the resource signed in to. */
export type SignInOrigin = { domain: string; uri: string };

const rejected = (code: ProblemCode, detail: string) =>
  new ProblemError({ status: 401, code, title: "The sign-in was not accepted", detail });

/**
 * Issues an EIP-4361 challenge and stores the exact text. The nonce comes from
 * `crypto.randomBytes` (viem's `generateSiweNonce` uses Math.random).
 */
export async function issueChallenge(
  db: Kysely<Database>,
  params: { portal: PortalRole; address: string; chainId: number; origin: SignInOrigin; ttlSeconds: number; now?: number },
): Promise<{ message: string; nonce: string; expiresAt: number }> {
  const now = params.now ?? Date.now();
  // Whole seconds: the message carries ISO timestamps, and the stored instants must equal them.
  const issuedAt = Math.floor(now / 1000) * 1000;
  const expiresAt = issuedAt + params.ttlSeconds * 1000;
  const nonce = randomBytes(16).toString("hex");
  const message = createSiweMessage({
    domain: params.origin.domain,
    address: getAddress(params.address),
    statement: `Sign in to the ${params.portal} portal. This request does not move funds or cost gas.`,
    uri: params.origin.uri,
    version: "1",
    chainId: params.chainId,
    nonce,
    issuedAt: new Date(issuedAt),
    expirationTime: new Date(expiresAt),
  });
  // Challenges are short-lived; drop those long past so the table stays small.
  await db
    .deleteFrom("portal_challenge")
    .where("expires_at", "<", now - 24 * 3600_000)
    .execute();
  await db
    .insertInto("portal_challenge")
    .values({
      nonce,
      portal: params.portal,
      address: params.address.toLowerCase(),
      chain_id: params.chainId,
      domain: params.origin.domain,
      uri: params.origin.uri,
      message,
      issued_at: issuedAt,
      expires_at: expiresAt,
      consumed_at: null,
    })
    .execute();
  return { message, nonce, expiresAt };
}

/**
 * Checks a signed challenge without consuming it: it must be the exact message we
 * issued for this portal and origin, unused and unexpired, and signed by its
 * address (EOA, EIP-1271 or EIP-6492 through the chain's public client).
 * `verifySiweMessage` checks only what it is given and never chain id, URI or the
 * age of `issuedAt`, so every field is compared with what was issued here.
 */
export async function checkSignedChallenge(
  context: Pick<AppContext, "store" | "rpc">,
  params: { portal: PortalRole; message: string; signature: Hex; origin: SignInOrigin; ttlSeconds: number; now?: number },
): Promise<PortalChallengeTable> {
  const now = params.now ?? Date.now();
  const parsed = parseSiweMessage(params.message);
  if (parsed.nonce === undefined)
    throw rejected("invalid_challenge", "The message is not a sign-in challenge issued by this service.");
  const challenge = await context.store
    .selectFrom("portal_challenge")
    .selectAll()
    .where("nonce", "=", parsed.nonce)
    .executeTakeFirst();
  if (challenge === undefined)
    throw rejected("invalid_challenge", "The message is not a sign-in challenge issued by this service.");
  if (challenge.portal !== params.portal) {
    throw rejected("wrong_portal", `This challenge was issued for the ${challenge.portal} portal; ask this portal for its own.`);
  }
  if (challenge.consumed_at !== null)
    throw rejected("challenge_used", "This challenge has already been used; request a new one.");
  if (now >= Number(challenge.expires_at)) throw rejected("challenge_expired", "This challenge has expired; request a new one.");
  if (params.message !== challenge.message) {
    throw rejected("message_altered", "The signed message differs from the challenge this service issued; sign it unchanged.");
  }
  if (challenge.domain !== params.origin.domain || parsed.domain !== challenge.domain) {
    throw rejected("wrong_domain", "This challenge was issued for another domain.");
  }
  if (parsed.uri !== challenge.uri || challenge.uri !== params.origin.uri) {
    throw rejected("wrong_uri", "This challenge was issued for another URI.");
  }
  if (parsed.chainId !== challenge.chain_id)
    throw rejected("wrong_chain", "The message names another chain than the one challenged.");
  if (parsed.address === undefined || !isAddressEqual(parsed.address, getAddress(challenge.address))) {
    throw rejected("wrong_address", "The message names another wallet than the one challenged.");
  }
  const issuedAt = parsed.issuedAt?.getTime();
  if (issuedAt !== Number(challenge.issued_at) || now - issuedAt > params.ttlSeconds * 1000 || issuedAt > now + 60_000) {
    throw rejected("challenge_expired", "The message's issue time is not the one issued or is too old.");
  }
  if (parsed.expirationTime?.getTime() !== Number(challenge.expires_at)) {
    throw rejected("message_altered", "The message's expiry differs from the challenge this service issued.");
  }

  const client = context.rpc.get(challenge.chain_id);
  if (client === undefined) throw rejected("wrong_chain", "The challenged chain is not enabled on this service.");
  let valid: boolean;
  try {
    valid = await verifySiweMessage(client, {
      message: params.message,
      signature: params.signature,
      address: getAddress(challenge.address),
      domain: challenge.domain,
      nonce: challenge.nonce,
      time: new Date(now),
    });
  } catch (error) {
    throw problem(
      "signature_check_unavailable",
      `The chain's node did not answer the signature check; try again. (${String(error).slice(0, 200)})`,
    );
  }
  if (!valid) throw rejected("invalid_signature", "The signature is not the challenged wallet's signature of this message.");
  return challenge;
}

/** Marks a challenge used; false when another request used it first (or it expired meanwhile). */
export async function consumeChallenge(trx: Kysely<Database>, nonce: string, now = Date.now()): Promise<boolean> {
  const result = await trx
    .updateTable("portal_challenge")
    .set({ consumed_at: now })
    .where("nonce", "=", nonce)
    .where("consumed_at", "is", null)
    .where("expires_at", ">", now)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
