import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Store } from "../store/open-store.js";

export type Partner = { id: string; name: string };

/** An API key is 32 random bytes; only its SHA-256 is stored, so a leaked store leaks no key. */
export function hashApiKey(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

/**
 * The prefix a new key gets: `sk_live_` only where real money moves, that is when the
 * service settles on Base mainnet outside local mode; on test networks only (local,
 * Base Sepolia, a fork) keys are `sk_test_`, so a key never says live on a test network.
 */
export function apiKeyModeFor(params: { localMode: boolean; networks: readonly { name: string }[] }): "test" | "live" {
  return !params.localMode && params.networks.some((network) => network.name === "base") ? "live" : "test";
}

export function generateApiKey(mode: "test" | "live"): string {
  return `sk_${mode}_${randomBytes(32).toString("base64url")}`;
}

export async function issueApiKey(store: Store, params: { partnerId: string; mode: "test" | "live"; apiKey?: string }) {
  const apiKey = params.apiKey ?? generateApiKey(params.mode);
  const id = `key_${randomUUID()}`;
  await store
    .insertInto("api_key")
    .values({
      id,
      partner_id: params.partnerId,
      key_hash: hashApiKey(apiKey),
      key_prefix: apiKey.slice(0, 12),
      created_at: Date.now(),
      revoked_at: null,
    })
    .execute();
  return { id, apiKey };
}

export async function findPartnerByApiKey(store: Store, apiKey: string): Promise<Partner | undefined> {
  const row = await store
    .selectFrom("api_key")
    .innerJoin("partner", "partner.id", "api_key.partner_id")
    .select(["partner.id as id", "partner.name as name"])
    .where("api_key.key_hash", "=", hashApiKey(apiKey))
    .where("api_key.revoked_at", "is", null)
    .executeTakeFirst();
  return row;
}

export async function createPartner(store: Store, params: { name: string; id?: string }): Promise<Partner> {
  const partner = { id: params.id ?? `ptr_${randomUUID()}`, name: params.name };
  await store
    .insertInto("partner")
    .values({ ...partner, created_at: Date.now() })
    .execute();
  return partner;
}

export async function addPaymentAddress(
  store: Store,
  params: { partnerId: string; network: string; chainId: number; address: string },
): Promise<void> {
  await store
    .insertInto("payment_address")
    .values({
      id: `pad_${randomUUID()}`,
      partner_id: params.partnerId,
      network: params.network,
      chain_id: params.chainId,
      address: params.address.toLowerCase(),
      created_at: Date.now(),
    })
    .execute();
}

export async function paymentAddressesOf(store: Store, partnerId: string) {
  return store
    .selectFrom("payment_address")
    .select(["network", "chain_id", "address"])
    .where("partner_id", "=", partnerId)
    .orderBy("created_at")
    .execute();
}
