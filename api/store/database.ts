import type { Generated } from "kysely";
import type { AccountingTables } from "./accounting-tables.js";
import type { HostedTables } from "./hosted-tables.js";
import type { MemberTables } from "./member-tables.js";
import type { OperatorTables } from "./operator-tables.js";
import type { PortalTables } from "./portal-tables.js";
import type { RefundTables } from "./refund-tables.js";
import type { RelayLimitTables } from "./relay-limit-tables.js";
import type { RelayTables } from "./relay-tables.js";
import type { RewardTables } from "./reward-tables.js";
import type { SubscriptionTables } from "./subscription-tables.js";
import type { WebhookTables } from "./webhook-tables.js";

/**
 * Our own state (everything that is not an indexed chain fact), one type per table.
 * Portable between SQLite and Postgres: ids and money are text (money as a canonical
 * decimal string of USDC base units), instants are integer milliseconds since epoch.
 */
export interface Database
  extends CommerceTables,
    WebhookTables,
    PortalTables,
    MemberTables,
    HostedTables,
    RelayTables,
    OperatorTables,
    RewardTables,
    RelayLimitTables,
    RefundTables,
    AccountingTables,
    SubscriptionTables {
  partner: PartnerTable;
  api_key: ApiKeyTable;
  payment_address: PaymentAddressTable;
  worker_heartbeat: WorkerHeartbeatTable;
}

export interface PartnerTable {
  id: string;
  name: string;
  created_at: number;
}

export interface ApiKeyTable {
  id: string;
  partner_id: string;
  /** SHA-256 of the whole key, hex. The key itself is shown once and never stored. */
  key_hash: string;
  /** First characters of the key, so a partner can tell keys apart. */
  key_prefix: string;
  created_at: number;
  revoked_at: number | null;
  /** `full` (every call) or `read` (GET only, `rk_…` keys; migration 0014). */
  scope: ApiKeyScope;
}

export type ApiKeyScope = "full" | "read";

export interface PaymentAddressTable {
  id: string;
  partner_id: string;
  network: string;
  chain_id: number;
  /** Lower-case hex, the form the index stores. */
  address: string;
  created_at: number;
}

export interface WorkerHeartbeatTable {
  /** `<worker name>:<process id>` */
  id: string;
  worker: string;
  beat_at: number;
}

export type SessionStatus = "awaiting_payment" | "payment_pending" | "settled" | "expired";
export type OrderStatus = "awaiting_payment" | "paid" | "fulfilled";
/** `reorged`: a settled or attached payment whose transfer a reorg took off the chain (see api/settlement/reorg-watch.ts). */
export type PaymentStatus = "pending" | "settled" | "unresolved" | "refund_requested" | "attached" | "reorged";
export type CertificateStatus = "not_requested" | "awaiting_wallet" | "voucher_issued" | "pending" | "minted";

export interface CommerceTables {
  orders: OrdersTable;
  checkout_session: CheckoutSessionTable;
  amount_reservation: AmountReservationTable;
  client_token: ClientTokenTable;
  payment: PaymentTable;
  certificate: CertificateTable;
  event: EventTable;
  idempotency_record: IdempotencyRecordTable;
  worker_cursor: WorkerCursorTable;
}

export interface OrdersTable {
  id: string;
  partner_id: string;
  external_order_id: string;
  /** bytes32 hex; the certificate's token id is uint256 of it. */
  purchase_id: string;
  status: OrderStatus;
  settled_session_id: string | null;
  fulfilment_reference: string | null;
  fulfilment_idempotency_key: string | null;
  fulfilled_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface CheckoutSessionTable {
  id: string;
  partner_id: string;
  order_id: string;
  /** `commerce` (partner checkout) or `rwa` (investor purchase). */
  kind: string;
  status: SessionStatus;
  network: string;
  chain_id: number;
  token_address: string;
  payment_address: string;
  total_price_usdc: string;
  amount_offset: number;
  amount_due: string;
  /** When set, only a transfer from this wallet settles the session (RWA purchases). */
  required_payer: string | null;
  external_order_id: string;
  external_product_id: string;
  product_name: string;
  product_category: string;
  quantity: number;
  shipping_required: number;
  certificate_enabled: number;
  contact_json: string | null;
  delivery_json: string | null;
  metadata_json: string | null;
  expires_at: number;
  late_until: number;
  created_at: number;
  updated_at: number;
}

export interface AmountReservationTable {
  chain_id: number;
  payment_address: string;
  amount_due: string;
  total_price_usdc: string;
  session_id: string;
  released_at: number;
}

export interface ClientTokenTable {
  token_hash: string;
  session_id: string;
  expires_at: number;
  created_at: number;
}

export interface PaymentTable {
  chain_id: number;
  transaction_hash: string;
  log_index: number;
  partner_id: string | null;
  session_id: string | null;
  status: PaymentStatus;
  reason: string | null;
  from_address: string;
  to_address: string;
  amount: string;
  block_number: number;
  block_hash: string;
  block_timestamp: number;
  resolution: string | null;
  created_at: number;
  updated_at: number;
}

export interface CertificateTable {
  order_id: string;
  purchase_id: string;
  status: CertificateStatus;
  chain_id: number;
  contract_address: string;
  buyer: string | null;
  token_id: string;
  voucher_deadline: number | null;
  mint_transaction_hash: string | null;
  mint_block_number: number | null;
  minted_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface EventTable {
  seq: Generated<number>;
  id: string;
  partner_id: string;
  type: string;
  /** Events with the same key are delivered in order (the order id, or the payment for unresolved ones). */
  ordering_key: string;
  /** The exact JSON body partners receive, serialised once. */
  payload: string;
  created_at: number;
}

export interface IdempotencyRecordTable {
  partner_id: string;
  scope: string;
  idempotency_key: string;
  request_hash: string;
  resource_id: string;
  created_at: number;
}

export interface WorkerCursorTable {
  name: string;
  value: string;
  updated_at: number;
}
