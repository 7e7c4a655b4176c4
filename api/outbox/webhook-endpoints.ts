import { randomBytes, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { z } from "zod";
import { keysetPage, type Page } from "../http/cursor.js";
import { problem, problems } from "../http/problem.js";
import type { Database } from "../store/database.js";
import type { Store } from "../store/open-store.js";
import type { WebhookEndpointTable } from "../store/webhook-tables.js";
import { cancelEndpointDeliveries } from "./deliveries.js";
import { EVENT_TYPES, type EventType } from "./event-types.js";
import type { SecretBox } from "./secret-box.js";
import { ALL_EVENTS, type EventSubscription, parseSubscription } from "./subscription.js";
import { checkWebhookUrl, type WebhookUrlPolicy } from "./webhook-url.js";

export const MAX_ENDPOINTS_PER_PARTNER = 16;
export const DEFAULT_PREVIOUS_SECRET_LIFETIME_SECONDS = 24 * 60 * 60;

export type WebhookEndpoint = {
  id: string;
  url: string;
  events: EventSubscription;
  createdAt: string;
  /** While a rotation is in progress, when the previous secret stops signing. */
  previousSecretExpiresAt: string | null;
};

export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

function toEndpoint(row: WebhookEndpointTable, now = Date.now()): WebhookEndpoint {
  const previousActive = row.previous_secret_expires_at !== null && Number(row.previous_secret_expires_at) > now;
  return {
    id: row.id,
    url: row.url,
    events: parseSubscription(row.events_json),
    createdAt: new Date(Number(row.created_at)).toISOString(),
    previousSecretExpiresAt: previousActive ? new Date(Number(row.previous_secret_expires_at)).toISOString() : null,
  };
}

export const invalidWebhookUrl = (detail: string) => problem("invalid_webhook_url", detail);

function normaliseEvents(events: readonly string[] | undefined): EventSubscription {
  if (events === undefined || events.includes(ALL_EVENTS)) return [ALL_EVENTS];
  const known = new Set<string>(EVENT_TYPES);
  const unknown = events.filter((type) => !known.has(type));
  if (unknown.length > 0) throw problems.invalidRequest(`Unknown event type(s): ${unknown.join(", ")}.`);
  return [...new Set(events)].sort() as EventType[];
}

/**
 * Registers a webhook endpoint. The URL is checked (scheme, and every address its
 * host resolves to) before anything is stored; the secret is returned only here.
 * The endpoint receives events recorded from now on: deliveries fan out when an
 * event is recorded, so earlier events reach it only through a redelivery.
 */
export async function createWebhookEndpoint(
  store: Store,
  params: { partnerId: string; url: string; events?: readonly string[]; policy: WebhookUrlPolicy; secretBox: SecretBox },
): Promise<WebhookEndpoint & { secret: string }> {
  const events = normaliseEvents(params.events);
  const check = await checkWebhookUrl(params.url, params.policy);
  if (!check.ok) throw invalidWebhookUrl(check.reason);

  const existing = await store
    .selectFrom("webhook_endpoint")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .where("partner_id", "=", params.partnerId)
    .where("deleted_at", "is", null)
    .executeTakeFirstOrThrow();
  if (Number(existing.count) >= MAX_ENDPOINTS_PER_PARTNER) {
    throw problem(
      "too_many_webhook_endpoints",
      `A partner may register at most ${MAX_ENDPOINTS_PER_PARTNER} webhook endpoints; delete one first.`,
    );
  }

  const id = `we_${randomUUID().replaceAll("-", "")}`;
  const secret = generateWebhookSecret();
  const now = Date.now();
  const row: WebhookEndpointTable = {
    id,
    partner_id: params.partnerId,
    url: check.url.href,
    events_json: JSON.stringify(events),
    secret_ciphertext: params.secretBox.seal(secret, id),
    previous_secret_ciphertext: null,
    previous_secret_expires_at: null,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  await store.insertInto("webhook_endpoint").values(row).execute();
  return { ...toEndpoint(row, now), secret };
}

export async function findWebhookEndpoint(
  store: Kysely<Database>,
  params: { partnerId: string; endpointId: string },
): Promise<WebhookEndpointTable | undefined> {
  return store
    .selectFrom("webhook_endpoint")
    .selectAll()
    .where("id", "=", params.endpointId)
    .where("partner_id", "=", params.partnerId)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
}

/** The partner's endpoints not deleted, with what each subscribes to: an event's fan-out (record-event.ts). */
export async function liveEndpointSubscriptions(db: Kysely<Database>, partnerId: string) {
  return db
    .selectFrom("webhook_endpoint")
    .select(["id", "events_json"])
    .where("partner_id", "=", partnerId)
    .where("deleted_at", "is", null)
    .execute();
}

/** A live endpoint by id alone, with its partner (the operator's `webhook test`); undefined when deleted or unknown. */
export async function liveWebhookEndpoint(db: Kysely<Database>, endpointId: string) {
  return db
    .selectFrom("webhook_endpoint")
    .select(["id", "partner_id", "url"])
    .where("id", "=", endpointId)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
}

export async function getWebhookEndpoint(store: Store, params: { partnerId: string; endpointId: string }) {
  const row = await findWebhookEndpoint(store, params);
  if (row === undefined) throw problems.notFound(`Webhook endpoint ${params.endpointId}`);
  return toEndpoint(row);
}

/** The partner's endpoints, oldest first, keyset-paged on (created_at, id). */
export async function listWebhookEndpoints(
  store: Store,
  params: { partnerId: string; cursor?: string; limit: number },
): Promise<Page<WebhookEndpoint>> {
  return keysetPage({
    cursor: params.cursor,
    limit: params.limit,
    key: z.object({ t: z.number().int(), i: z.string() }),
    fetch: (after, take) => {
      let query = store
        .selectFrom("webhook_endpoint")
        .selectAll()
        .where("partner_id", "=", params.partnerId)
        .where("deleted_at", "is", null);
      if (after !== undefined) {
        query = query.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), ">", tuple(after.t, after.i)));
      }
      return query.orderBy("created_at").orderBy("id").limit(take).execute();
    },
    keyOf: (row) => ({ t: Number(row.created_at), i: row.id }),
    view: (rows) => rows.map((row) => toEndpoint(row)),
  });
}

/** Deletes an endpoint; its deliveries not yet made are cancelled (attempts in flight may still land). */
export async function deleteWebhookEndpoint(store: Store, params: { partnerId: string; endpointId: string }): Promise<void> {
  const now = Date.now();
  await store.transaction().execute(async (trx) => {
    const deleted = await trx
      .updateTable("webhook_endpoint")
      .set({ deleted_at: now, updated_at: now })
      .where("id", "=", params.endpointId)
      .where("partner_id", "=", params.partnerId)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    if (Number(deleted.numUpdatedRows) !== 1) throw problems.notFound(`Webhook endpoint ${params.endpointId}`);
    await cancelEndpointDeliveries(trx, { endpointId: params.endpointId, now });
  });
}

/**
 * Replaces the signing secret. The secret it replaces keeps signing alongside the
 * new one (two `v1=` entries) until `previousSecretExpiresAt`, so the partner can
 * switch its receiver without dropping an event. Rotating again during that window
 * retires the oldest secret at once: at most two secrets sign.
 */
export async function rotateWebhookSecret(
  store: Store,
  params: { partnerId: string; endpointId: string; previousSecretLifetimeSeconds?: number; secretBox: SecretBox },
): Promise<{ id: string; secret: string; previousSecretExpiresAt: string }> {
  const now = Date.now();
  const lifetime = params.previousSecretLifetimeSeconds ?? DEFAULT_PREVIOUS_SECRET_LIFETIME_SECONDS;
  const expiresAt = now + lifetime * 1000;
  const secret = generateWebhookSecret();
  await store.transaction().execute(async (trx) => {
    const row = await findWebhookEndpoint(trx, params);
    if (row === undefined) throw problems.notFound(`Webhook endpoint ${params.endpointId}`);
    // A secret sealed under a key that is gone cannot keep signing; the rotation
    // then simply replaces it (this is how endpoints recover from a lost key file).
    const current = openOrUndefined(params.secretBox, row.secret_ciphertext, row.id);
    const updated = await trx
      .updateTable("webhook_endpoint")
      .set({
        secret_ciphertext: params.secretBox.seal(secret, row.id),
        previous_secret_ciphertext: current === undefined ? null : params.secretBox.seal(current, row.id),
        previous_secret_expires_at: current === undefined ? null : expiresAt,
        updated_at: now,
      })
      .where("id", "=", row.id)
      .where("secret_ciphertext", "=", row.secret_ciphertext)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) {
      throw problem(
        "concurrent_rotation",
        "Another rotation of this endpoint's secret happened at the same time; read the endpoint and try again.",
      );
    }
  });
  return { id: params.endpointId, secret, previousSecretExpiresAt: new Date(expiresAt).toISOString() };
}

function openOrUndefined(secretBox: SecretBox, sealed: string, context: string): string | undefined {
  try {
    return secretBox.open(sealed, context);
  } catch {
    return undefined;
  }
}

/** The secrets that sign a delivery now: the current one, then the previous one while it lasts. */
export function signingSecrets(row: WebhookEndpointTable, secretBox: SecretBox, now = Date.now()): string[] {
  const secrets = [secretBox.open(row.secret_ciphertext, row.id)];
  if (
    row.previous_secret_ciphertext !== null &&
    row.previous_secret_expires_at !== null &&
    Number(row.previous_secret_expires_at) > now
  ) {
    secrets.push(secretBox.open(row.previous_secret_ciphertext, row.id));
  }
  return secrets;
}
