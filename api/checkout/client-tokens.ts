import { createHash, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { problem } from "../http/problem.js";
import type { Database } from "../store/database.js";
import {
  type CheckoutSession,
  type SessionSurroundings,
  sessionOfClientToken,
  sessionWithSurroundings,
} from "./session-record.js";

/**
 * Client tokens are the browser's credential for one session: random, stored as
 * SHA-256 only, valid until the session's expiry; afterwards they still read and
 * claim a settled session, and nothing else.
 */
export const hashClientToken = (token: string) => createHash("sha256").update(token).digest("hex");

export async function issueClientToken(
  trx: Kysely<Database>,
  params: { sessionId: string; expiresAt: number; now: number },
): Promise<string> {
  const token = `ct_${randomBytes(24).toString("base64url")}`;
  await trx
    .insertInto("client_token")
    .values({
      token_hash: hashClientToken(token),
      session_id: params.sessionId,
      expires_at: params.expiresAt,
      created_at: params.now,
    })
    .execute();
  return token;
}

export type ClientTokenUse = "read" | "claim" | "write";

const invalidToken = () =>
  problem("invalid_client_token", "Use the clientToken returned when this checkout session was created.");

/** Resolves a client token to its session, refusing tokens of other sessions and expired uses. */
export async function authenticateClientToken(
  db: Kysely<Database>,
  /** Without `sessionId` the token names its session (hash submission carries no session id). */
  params: { sessionId?: string; clientToken: string; use: ClientTokenUse; now?: number },
): Promise<CheckoutSession> {
  const found = await sessionOfClientToken(db, hashClientToken(params.clientToken));
  return admitClientToken(found, params);
}

/**
 * The session and its surroundings a client token opens, in one query
 * (`sessionWithSurroundings`), admitted by the same rule as `authenticateClientToken`.
 */
export async function authenticateClientTokenWithSurroundings(
  db: Kysely<Database>,
  params: { sessionId?: string; clientToken: string; use: ClientTokenUse; now?: number },
): Promise<SessionSurroundings> {
  const clientTokenHash = hashClientToken(params.clientToken);
  const found = await sessionWithSurroundings(
    db,
    params.sessionId === undefined ? { clientTokenHash } : { sessionId: params.sessionId, clientTokenHash },
  );
  admitClientToken(
    found === undefined || found.tokenExpiresAt === undefined
      ? undefined
      : { session: found.session, tokenExpiresAt: found.tokenExpiresAt },
    params,
  );
  return found as SessionSurroundings;
}

/**
 * The one rule of a client token, on a session already read with the token's expiry: a token of
 * another session, of none, or of an investor's purchase is `invalid_client_token`; past its
 * expiry it still reads and claims a settled session, and nothing else (`session_expired`).
 */
export function admitClientToken(
  found: { session: CheckoutSession; tokenExpiresAt: number } | undefined,
  params: { sessionId?: string; use: ClientTokenUse; now?: number },
): CheckoutSession {
  const now = params.now ?? Date.now();
  // An investor's purchase is paid and claimed through the investor portal only, where
  // the recipient fixed at checkout and the freeze apply; no browser token opens it.
  if (
    found === undefined ||
    (params.sessionId !== undefined && found.session.id !== params.sessionId) ||
    found.session.kind === "rwa"
  ) {
    throw invalidToken();
  }
  const { session, tokenExpiresAt } = found;
  const live = now < tokenExpiresAt;
  if (!live && !(session.status === "settled" && params.use !== "write")) {
    throw problem("session_expired", "Ask the shop for a new checkout session for this order.");
  }
  return session;
}
