/**
 * Tables of signed event delivery (migration 0003): partners' webhook endpoints,
 * one delivery per (event, endpoint) fanned out when the event is recorded, and
 * every HTTP attempt of a delivery.
 */
export interface WebhookTables {
  webhook_endpoint: WebhookEndpointTable;
  webhook_delivery: WebhookDeliveryTable;
  webhook_delivery_attempt: WebhookDeliveryAttemptTable;
}

export interface WebhookEndpointTable {
  id: string;
  partner_id: string;
  url: string;
  /** JSON array of subscribed event types, or `["*"]` for every type (including types added later). */
  events_json: string;
  /** The signing secret, AES-256-GCM encrypted (api/outbox/secret-box.ts); it must be read back to sign. */
  secret_ciphertext: string;
  /** The secret replaced by the last rotation, still signing until `previous_secret_expires_at`. */
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
  /** Soft delete: deliveries keep their endpoint for the record. */
  deleted_at: number | null;
}

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

export interface WebhookDeliveryTable {
  id: string;
  event_id: string;
  /** Copied from the event: deliveries to one endpoint go out in `event_seq` order per `ordering_key`. */
  event_seq: number;
  ordering_key: string;
  partner_id: string;
  endpoint_id: string;
  status: WebhookDeliveryStatus;
  /** Attempts since the delivery was (re)queued; drives the backoff. */
  attempt_count: number;
  /** When the delivery was (re)queued; retries go on until this plus the retry window. */
  queued_at: number;
  next_attempt_at: number;
  /** A claim: the process holding `lock_token` owns the delivery until this instant. */
  locked_until: number | null;
  lock_token: string | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookDeliveryAttemptTable {
  id: string;
  delivery_id: string;
  started_at: number;
  duration_ms: number;
  /** The receiver's HTTP status, null when no response arrived. */
  status_code: number | null;
  /** Why the attempt failed (network error, timeout, refused address, non-2xx); null on success. */
  error: string | null;
  /** The first characters of a failed response's body, to help the partner debug. */
  response_excerpt: string | null;
}
