import { getAddress } from "viem";
import { z } from "zod";
import type { AppContext } from "../app-context.js";
import { type AuditActor, appendAudit } from "../audit/audit-log.js";
import { enabledNetwork } from "../config/enabled-networks.js";
import { keysetPage } from "../http/cursor.js";
import { problem, problems } from "../http/problem.js";
import type { ApiKeyScope, ApiKeyTable } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import {
  createPartner,
  findApiKeyOfPartner,
  findPartner,
  issueApiKey,
  keysOfPartner,
  listPartnerIds,
  markApiKeyRevoked,
  partnerRecord,
} from "./api-keys.js";
import { insertPaymentAddress, listPaymentAddresses, watchedByIndexer } from "./payment-addresses.js";

/** A key as the portals show it: its prefix only, never the key or its hash. */
function apiKeyView(key: ApiKeyTable) {
  return {
    id: key.id,
    prefix: key.key_prefix,
    scope: key.scope,
    createdAt: new Date(Number(key.created_at)).toISOString(),
    revokedAt: key.revoked_at === null ? null : new Date(Number(key.revoked_at)).toISOString(),
  };
}

/** A partner's API keys, oldest first, a page at a time (a partner may create any number). */
export function pageOfApiKeys(store: Store, params: { partnerId: string; cursor?: string; limit: number }) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: z.object({ t: z.number().int(), id: z.string() }),
    fetch: (after, take) => keysOfPartner(store, { partnerId: params.partnerId, after, limit: take }),
    keyOf: (key) => ({ t: Number(key.created_at), id: key.id }),
    view: (keys) => keys.map(apiKeyView),
  });
}

/** A partner with its keys (prefixes only) and payment addresses, as the admin portal lists it. */
export async function partnerDetails(store: Store, partnerId: string, indexSchema: string) {
  const partner = await partnerRecord(store, partnerId);
  if (partner === undefined) throw problems.notFound(`Partner ${partnerId}`);
  const [keys, addresses, issuer] = await Promise.all([
    keysOfPartner(store, { partnerId }),
    listPaymentAddresses(store, { partnerId, indexSchema }),
    store.selectFrom("issuer").select("id").where("partner_id", "=", partnerId).executeTakeFirst(),
  ]);
  return {
    id: partner.id,
    name: partner.name,
    issuerId: issuer?.id ?? null,
    createdAt: new Date(Number(partner.created_at)).toISOString(),
    apiKeys: keys.map(apiKeyView),
    paymentAddresses: addresses.map(({ id, network, chainId, address, watching }) => ({
      id,
      network,
      chainId,
      address,
      watching,
    })),
  };
}

/** Partners by id with their keys and addresses, one page at a time (the paging helper's cursor `{ id }`). */
export function pageOfPartners(store: Store, params: { cursor?: string; limit: number; indexSchema: string }) {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: z.object({ id: z.string() }),
    fetch: (after, take) => listPartnerIds(store, { after: after?.id, limit: take }),
    keyOf: (id) => ({ id }),
    view: (ids) => Promise.all(ids.map((id) => partnerDetails(store, id, params.indexSchema))),
  });
}

/** A commerce partner with its first API key, which is returned here once and never again. */
export async function createPartnerWithKey(store: Store, actor: AuditActor, params: { name: string; mode: "test" | "live" }) {
  return store.transaction().execute(async (trx) => {
    const partner = await createPartner(trx, { name: params.name });
    const key = await issueApiKey(trx, { partnerId: partner.id, mode: params.mode });
    await appendAudit(trx, {
      actor,
      action: "partner.create",
      target: { type: "partner", id: partner.id },
      details: { name: params.name, apiKeyId: key.id },
    });
    return { partner, key };
  });
}

/** A key for the partner: `full` (every call) or `read` (GETs only, for its accountant; docs/accounting.md). */
export async function createPartnerKey(
  store: Store,
  actor: AuditActor,
  params: { partnerId: string; mode: "test" | "live"; scope?: ApiKeyScope },
) {
  return store.transaction().execute(async (trx) => {
    const partner = await findPartner(trx, params.partnerId);
    if (partner === undefined) throw problems.notFound(`Partner ${params.partnerId}`);
    const key = await issueApiKey(trx, { partnerId: partner.id, mode: params.mode, scope: params.scope ?? "full" });
    await appendAudit(trx, {
      actor,
      action: "partner.api_key.create",
      target: { type: "partner", id: partner.id },
      details: { apiKeyId: key.id, prefix: key.apiKey.slice(0, 12), scope: key.scope },
    });
    return key;
  });
}

/** Revokes one of the partner's keys; with `onlyScope`, a key of another scope is as missing (a full key revokes read-only keys only). */
export async function revokePartnerKey(
  store: Store,
  actor: AuditActor,
  params: { partnerId: string; keyId: string; onlyScope?: ApiKeyScope },
) {
  await store.transaction().execute(async (trx) => {
    const now = Date.now();
    const key = await findApiKeyOfPartner(trx, params);
    if (key === undefined || (params.onlyScope !== undefined && key.scope !== params.onlyScope))
      throw problems.notFound(`API key ${params.keyId}`);
    await markApiKeyRevoked(trx, { keyId: key.id, now });
    await appendAudit(trx, {
      actor,
      action: "partner.api_key.revoke",
      target: { type: "partner", id: params.partnerId },
      details: { apiKeyId: key.id },
      now,
    });
  });
}

/**
 * Gives a partner a payment address on an enabled network. The indexer reads the
 * store's addresses when it starts: one added while it runs answers `watching:
 * false` until the indexer has restarted with it (its payments are then found from
 * the start block on, none is lost).
 */
export async function addPartnerPaymentAddress(
  context: Pick<AppContext, "store" | "networks" | "settings">,
  actor: AuditActor,
  params: { partnerId: string; network: string; address: string },
) {
  const network = enabledNetwork(context, params.network);
  const address = params.address.toLowerCase();
  const added = await context.store.transaction().execute(async (trx) => {
    const partner = await findPartner(trx, params.partnerId);
    if (partner === undefined) throw problems.notFound(`Partner ${params.partnerId}`);
    const id = await insertPaymentAddress(trx, {
      partnerId: partner.id,
      network: network.name,
      chainId: network.chainId,
      address,
    });
    if (id === undefined) {
      throw problem("payment_address_taken", "A payment address belongs to one partner; choose another watched address.");
    }
    await appendAudit(trx, {
      actor,
      action: "partner.payment_address.add",
      target: { type: "partner", id: partner.id },
      details: { network: network.name, address: getAddress(address) },
    });
    return { id, network: network.name, chainId: network.chainId, address: getAddress(address) };
  });
  const watched = await watchedByIndexer(context.store, context.settings.indexSchema);
  return { ...added, watching: watched.get(network.name)?.has(address) ?? false };
}
