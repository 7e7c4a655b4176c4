import { createHmac, timingSafeEqual } from "node:crypto";
import type { Kysely } from "kysely";
import { liveAuditorKeyHash } from "../partners/api-keys.js";
import type { Database } from "../store/database.js";

/**
 * Before the operator CLI sends the auditor key it issued for a report, the service
 * at the URL proves that it holds the same store (docs/accounting.md, "From the
 * operator CLI"): the CLI sends the key's id and a fresh challenge, and only a process
 * that can read the key's stored hash can answer HMAC-SHA256(hash, challenge). Another
 * service on the port (another stack) cannot, and never sees the key.
 */
const PROOF_CONTEXT = "settlement report identity v1";

/** The proof for a challenge, from the key's stored SHA-256 (hex); the CLI computes the same from the key it holds. */
export function identityProof(keyHash: string, challenge: string): string {
  return createHmac("sha256", keyHash).update(`${PROOF_CONTEXT}\n${challenge}`).digest("hex");
}

/** Whether an answer is the proof (constant time). */
export function isIdentityProof(keyHash: string, challenge: string, answer: unknown): boolean {
  if (typeof answer !== "string" || !/^[0-9a-f]{64}$/.test(answer)) return false;
  return timingSafeEqual(Buffer.from(identityProof(keyHash, challenge), "hex"), Buffer.from(answer, "hex"));
}

/** The service's answer: the proof for a live auditor key, undefined for a key it does not hold (or revoked). */
export async function answerIdentityChallenge(
  db: Kysely<Database>,
  params: { keyId: string; challenge: string },
): Promise<string | undefined> {
  const keyHash = await liveAuditorKeyHash(db, params.keyId);
  return keyHash === undefined ? undefined : identityProof(keyHash, params.challenge);
}
