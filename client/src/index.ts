/**
 * `@usdc-settlement/client`: the partner side of the USDC settlement service.
 * Server-side only (Node 20+): it holds your API key and webhook secrets.
 */
export { baseUnitsString, formatUsdc, parseUsdc, toBaseUnits, USDC_DECIMALS } from "./amounts.js";
export { type ClientOptions, createClient, type SettlementClient } from "./client.js";
export { EventPayloadError, SettlementApiError, SettlementConnectionError } from "./errors.js";
export type { components, operations, paths } from "./generated/openapi.js";
export { CHAIN_IDS, DEFAULT_BASE_URLS, type NetworkName } from "./networks.js";
export { signPayload, verifySignature } from "./signature.js";
export type * from "./types.js";
export {
  type ApplyEvent,
  constructEvent,
  createEventReceiver,
  DEFAULT_TOLERANCE_SECONDS,
  type EventHandlingResult,
  handleEvent,
  type ProcessedEventStore,
  SIGNATURE_HEADER,
  type WebhookSecret,
  WebhookSignatureError,
} from "./webhooks.js";
