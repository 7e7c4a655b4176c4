import { randomUUID } from "node:crypto";
import { SIGNATURE_HEADER, signPayload } from "../../client/src/signature.js";
import { problems } from "../http/problem.js";
import type { Store } from "../store/open-store.js";
import type { SecretBox } from "./secret-box.js";
import { sendWebhook, USER_AGENT } from "./send-webhook.js";
import { findWebhookEndpoint, signingSecrets } from "./webhook-endpoints.js";
import type { WebhookUrlPolicy } from "./webhook-url.js";

export const TEST_EVENT_TYPE = "webhook.test";

export type TestEventResult = {
  eventId: string;
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseExcerpt: string | null;
};

/**
 * Sends one signed `webhook.test` event to one of the partner's endpoints now, outside
 * the outbox: nothing is recorded, nothing is retried, and no other endpoint hears it.
 * The same URL check, pinned connection and signature as a real delivery; another
 * partner's (or a deleted) endpoint is a 404.
 */
export async function sendTestEvent(
  store: Store,
  params: { partnerId: string; endpointId: string; secretBox: SecretBox; policy: WebhookUrlPolicy; timeoutMs: number },
): Promise<TestEventResult> {
  const row = await findWebhookEndpoint(store, { partnerId: params.partnerId, endpointId: params.endpointId });
  if (row === undefined) throw problems.notFound(`Webhook endpoint ${params.endpointId}`);
  const startedAt = Date.now();
  const eventId = `evt_test_${randomUUID().replaceAll("-", "")}`;
  const payload = JSON.stringify({
    id: eventId,
    type: TEST_EVENT_TYPE,
    createdAt: new Date(startedAt).toISOString(),
    data: { endpointId: row.id },
  });
  let secrets: string[];
  try {
    secrets = signingSecrets(row, params.secretBox, startedAt);
  } catch {
    return {
      eventId,
      ok: false,
      statusCode: null,
      durationMs: 0,
      error: "the signing secret cannot be decrypted with the configured SECRETS_KEY_FILE; rotate the endpoint's secret",
      responseExcerpt: null,
    };
  }
  const outcome = await sendWebhook({
    url: row.url,
    payload,
    headers: {
      "Content-Type": "application/json",
      "User-Agent": USER_AGENT,
      [SIGNATURE_HEADER]: signPayload({ payload, secrets, timestamp: Math.floor(startedAt / 1000) }),
      "Service-Event-Id": eventId,
      "Service-Event-Type": TEST_EVENT_TYPE,
    },
    policy: params.policy,
    timeoutMs: params.timeoutMs,
  });
  return { eventId, ...outcome, durationMs: Date.now() - startedAt };
}
