import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { type Address, getAddress, type Hex } from "viem";
import { assertInTransaction } from "../store/caller-transaction.js";
import type { Database } from "../store/database.js";
import type { SubscriptionCancelledBy, SubscriptionStatus, SubscriptionTable } from "../store/subscription-tables.js";
import { type InputOf, planMove, type TransitionTable } from "../store/transition-table.js";

/**
 * The subscription record: the only module that reads or writes the `subscription`
 * table. Rows become `Subscription` in `toSubscription`; every status change is one of
 * `subscriptionTransitions`, applied by `moveSubscription` with one guarded UPDATE
 * inside the caller's transaction.
 */
export type Subscription = {
  id: string;
  partnerId: string;
  externalCustomerId: string;
  productName: string;
  amount: bigint;
  interval: string;
  periodSeconds: number;
  startAt: number | null;
  endAt: number | null;
  metadata: Record<string, unknown> | null;
  successUrl: string | null;
  cancelUrl: string | null;
  idempotencyKey: string | null;
  clientTokenHash: string;
  status: SubscriptionStatus;
  chainId: number;
  manager: Address;
  token: Address;
  payee: Address;
  subscriber: Address | null;
  onchainId: Hex | null;
  /** Unix seconds, as the signed terms carry them. */
  termsStart: number | null;
  termsEnd: number | null;
  permitValue: bigint | null;
  authorizationTransactionHash: Hex | null;
  activatedAt: number | null;
  cancelAtPeriodEnd: boolean;
  cancelledBy: SubscriptionCancelledBy | null;
  cancelledAt: number | null;
  endedAt: number | null;
  expiresAt: number;
  createdAt: number;
  updatedAt: number;
};

/** How long a customer has to authorise a new subscription (SPEC 18). */
export const SUBSCRIPTION_AUTHORIZATION_WINDOW_MS = 24 * 3_600_000;

export const subscriptionTransitions = {
  /** Its `Subscribed` is indexed; a registration mined after the 24 h still counts: the customer signed the terms issued. */
  activate: {
    from: ["awaiting_authorization", "expired"],
    to: "active",
    guard: "onchain_id is the indexed id",
    set: (facts: { onchainId: Hex; activatedAt: number }) => ({ activated_at: facts.activatedAt }),
  },
  /** A charge of it failed (`subscription.past_due`). */
  fall_past_due: { from: ["active"], to: "past_due" },
  /** A retry of the failed charge was paid. */
  recover: { from: ["past_due"], to: "active" },
  /** By the customer on chain or on the page, by the partner, or when the retries ran out. */
  cancel: {
    from: ["awaiting_authorization", "active", "past_due"],
    to: "cancelled",
    set: (facts: { cancelledBy: SubscriptionCancelledBy }, _subscription: unknown, now: number) => ({
      cancelled_by: facts.cancelledBy,
      cancelled_at: now,
    }),
  },
  /** The chain's time reached the terms' `end`. */
  end: {
    from: ["active", "past_due"],
    to: "ended",
    set: (_facts: unknown, _subscription: unknown, now: number) => ({ ended_at: now }),
  },
  /** Not authorised within 24 h of its creation. */
  expire: {
    from: ["awaiting_authorization"],
    to: "expired",
    guard: "expires_at has passed",
    refuse: (_facts: unknown, subscription: Pick<Subscription, "expiresAt">, now: number) =>
      now < subscription.expiresAt ? "not expired yet" : undefined,
  },
} as const satisfies TransitionTable<SubscriptionStatus, string, SubscriptionTable>;

export type SubscriptionTransition = keyof typeof subscriptionTransitions;

export function toSubscription(row: SubscriptionTable): Subscription {
  const optionalNumber = (value: number | string | null) => (value === null ? null : Number(value));
  return {
    id: row.id,
    partnerId: row.partner_id,
    externalCustomerId: row.external_customer_id,
    productName: row.product_name,
    amount: BigInt(row.amount),
    interval: row.interval,
    periodSeconds: Number(row.period_seconds),
    startAt: optionalNumber(row.start_at),
    endAt: optionalNumber(row.end_at),
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    successUrl: row.success_url,
    cancelUrl: row.cancel_url,
    idempotencyKey: row.idempotency_key,
    clientTokenHash: row.client_token_hash,
    status: row.status,
    chainId: Number(row.chain_id),
    manager: getAddress(row.manager_address),
    token: getAddress(row.token_address),
    payee: getAddress(row.payee),
    subscriber: row.subscriber === null ? null : getAddress(row.subscriber),
    onchainId: row.onchain_id as Hex | null,
    termsStart: optionalNumber(row.terms_start),
    termsEnd: optionalNumber(row.terms_end),
    permitValue: row.permit_value === null ? null : BigInt(row.permit_value),
    authorizationTransactionHash: row.authorization_transaction_hash as Hex | null,
    activatedAt: optionalNumber(row.activated_at),
    cancelAtPeriodEnd: Number(row.cancel_at_period_end) === 1,
    cancelledBy: row.cancelled_by,
    cancelledAt: optionalNumber(row.cancelled_at),
    endedAt: optionalNumber(row.ended_at),
    expiresAt: Number(row.expires_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export function newSubscriptionId(): string {
  return `sub_${randomBytes(12).toString("hex")}`;
}

/** A new `awaiting_authorization` subscription; a replayed idempotency key answers the partner's existing one. */
export async function insertSubscription(
  trx: Kysely<Database>,
  params: Pick<
    Subscription,
    | "partnerId"
    | "externalCustomerId"
    | "productName"
    | "amount"
    | "interval"
    | "periodSeconds"
    | "startAt"
    | "endAt"
    | "metadata"
    | "successUrl"
    | "cancelUrl"
    | "idempotencyKey"
    | "clientTokenHash"
    | "chainId"
    | "manager"
    | "token"
    | "payee"
  > & {
    id?: string;
    now: number;
  },
): Promise<{ subscription: Subscription; created: boolean }> {
  assertInTransaction(trx, "subscription");
  const id = params.id ?? newSubscriptionId();
  const result = await trx
    .insertInto("subscription")
    .values({
      id,
      partner_id: params.partnerId,
      external_customer_id: params.externalCustomerId,
      product_name: params.productName,
      amount: params.amount.toString(),
      interval: params.interval,
      period_seconds: params.periodSeconds,
      start_at: params.startAt,
      end_at: params.endAt,
      metadata: params.metadata === null ? null : JSON.stringify(params.metadata),
      success_url: params.successUrl,
      cancel_url: params.cancelUrl,
      idempotency_key: params.idempotencyKey,
      client_token_hash: params.clientTokenHash,
      status: "awaiting_authorization",
      chain_id: params.chainId,
      manager_address: params.manager.toLowerCase(),
      token_address: params.token.toLowerCase(),
      payee: params.payee.toLowerCase(),
      subscriber: null,
      onchain_id: null,
      terms_start: null,
      terms_end: null,
      permit_value: null,
      authorization_transaction_hash: null,
      activated_at: null,
      cancel_at_period_end: 0,
      cancelled_by: null,
      cancelled_at: null,
      ended_at: null,
      expires_at: params.now + SUBSCRIPTION_AUTHORIZATION_WINDOW_MS,
      created_at: params.now,
      updated_at: params.now,
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (result.numInsertedOrUpdatedRows === 1n) {
    return { subscription: (await findSubscription(trx, id)) as Subscription, created: true };
  }
  if (params.idempotencyKey === null) throw new Error(`subscription ${id} already exists`);
  const existing = await trx
    .selectFrom("subscription")
    .selectAll()
    .where("partner_id", "=", params.partnerId)
    .where("idempotency_key", "=", params.idempotencyKey)
    .executeTakeFirstOrThrow();
  return { subscription: toSubscription(existing), created: false };
}

export async function findSubscription(db: Kysely<Database>, id: string): Promise<Subscription | undefined> {
  const row = await db.selectFrom("subscription").selectAll().where("id", "=", id).executeTakeFirst();
  return row === undefined ? undefined : toSubscription(row);
}

/** The partner's own subscription; another partner's is as missing as one that does not exist. */
export async function findPartnerSubscription(
  db: Kysely<Database>,
  params: { partnerId: string; id: string },
): Promise<Subscription | undefined> {
  const row = await db
    .selectFrom("subscription")
    .selectAll()
    .where("id", "=", params.id)
    .where("partner_id", "=", params.partnerId)
    .executeTakeFirst();
  return row === undefined ? undefined : toSubscription(row);
}

/** The subscription the manager's events name (any case). */
export async function subscriptionOfOnchainId(db: Kysely<Database>, onchainId: Hex): Promise<Subscription | undefined> {
  const row = await db
    .selectFrom("subscription")
    .selectAll()
    .where("onchain_id", "=", onchainId.toLowerCase())
    .executeTakeFirst();
  return row === undefined ? undefined : toSubscription(row);
}

/**
 * Records the terms issued to the customer's wallet (`POST …/terms`), so the service knows the
 * on-chain id before anything is sent. Only while awaiting authorisation; new terms (another wallet,
 * a later start) replace the previous ones. False when the subscription moved meanwhile.
 */
export async function recordTerms(
  trx: Kysely<Database>,
  params: {
    subscription: Pick<Subscription, "id">;
    subscriber: Address;
    onchainId: Hex;
    termsStart: number;
    termsEnd: number;
    permitValue: bigint;
    now: number;
  },
): Promise<boolean> {
  assertInTransaction(trx, "subscription");
  const updated = await trx
    .updateTable("subscription")
    .set({
      subscriber: params.subscriber.toLowerCase(),
      onchain_id: params.onchainId.toLowerCase(),
      terms_start: params.termsStart,
      terms_end: params.termsEnd,
      permit_value: params.permitValue.toString(),
      updated_at: params.now,
    })
    .where("id", "=", params.subscription.id)
    .where("status", "=", "awaiting_authorization")
    .executeTakeFirst();
  return updated.numUpdatedRows === 1n;
}

/** The transaction the service relayed for the customer's authorisation (before its `Subscribed` is indexed). */
export async function recordAuthorizationTransaction(
  trx: Kysely<Database>,
  params: { subscription: Pick<Subscription, "id">; transactionHash: Hex; now: number },
): Promise<boolean> {
  assertInTransaction(trx, "subscription");
  const updated = await trx
    .updateTable("subscription")
    .set({ authorization_transaction_hash: params.transactionHash.toLowerCase(), updated_at: params.now })
    .where("id", "=", params.subscription.id)
    .where("status", "=", "awaiting_authorization")
    .executeTakeFirst();
  return updated.numUpdatedRows === 1n;
}

/** The partner's cancel at the end of the current period: the subscription stays active until then. */
export async function markCancelAtPeriodEnd(
  trx: Kysely<Database>,
  params: { subscription: Pick<Subscription, "id">; now: number },
): Promise<boolean> {
  assertInTransaction(trx, "subscription");
  const updated = await trx
    .updateTable("subscription")
    .set({ cancel_at_period_end: 1, updated_at: params.now })
    .where("id", "=", params.subscription.id)
    .where("status", "in", ["active", "past_due"])
    .executeTakeFirst();
  return updated.numUpdatedRows === 1n;
}

/**
 * Applies one transition to the subscription as it was read, inside the caller's transaction
 * (its outbox event goes in the same one). A transition the table does not list from the read
 * status throws `TransitionRefused`; a concurrent change (the guarded UPDATE matches nothing)
 * answers false and changes nothing.
 */
export async function moveSubscription<name extends SubscriptionTransition>(
  trx: Kysely<Database>,
  params: {
    subscription: Pick<Subscription, "id" | "status" | "expiresAt">;
    transition: name;
    facts: InputOf<(typeof subscriptionTransitions)[name]>;
    now: number;
  },
): Promise<boolean> {
  assertInTransaction(trx, "subscription");
  const move = planMove<SubscriptionStatus, SubscriptionTransition, SubscriptionTable>(
    "subscription",
    subscriptionTransitions,
    params.transition,
    { current: params.subscription.status, input: params.facts, subject: params.subscription, now: params.now },
  );
  if (move.refused !== undefined) return false;
  let update = trx
    .updateTable("subscription")
    .set({ ...move.set, status: move.to, updated_at: params.now })
    .where("id", "=", params.subscription.id)
    .where("status", "=", params.subscription.status);
  if (params.transition === "expire") update = update.where("expires_at", "<=", params.now);
  // The terms issued last are the ones that activate it: a `Subscribed` of superseded terms does not.
  if (params.transition === "activate") {
    update = update.where("onchain_id", "=", (params.facts as { onchainId: Hex }).onchainId.toLowerCase());
  }
  const updated = await update.executeTakeFirst();
  return updated.numUpdatedRows === 1n;
}

/** A partner's subscriptions, newest first (`GET /v1/subscriptions`). */
export async function subscriptionsPage(
  db: Kysely<Database>,
  params: { partnerId: string; status?: SubscriptionStatus; after?: { createdAt: number; id: string }; take: number },
): Promise<Subscription[]> {
  let select = db.selectFrom("subscription").selectAll().where("partner_id", "=", params.partnerId);
  if (params.status !== undefined) select = select.where("status", "=", params.status);
  const after = params.after;
  if (after !== undefined) {
    select = select.where(({ eb, refTuple, tuple }) => eb(refTuple("created_at", "id"), "<", tuple(after.createdAt, after.id)));
  }
  const rows = await select.orderBy("created_at", "desc").orderBy("id", "desc").limit(params.take).execute();
  return rows.map(toSubscription);
}

/**
 * A replayed creation shows a new customer link: only the token's hash is kept, so the old token
 * cannot be shown again, and it stops working.
 */
export async function replaceClientToken(
  trx: Kysely<Database>,
  params: { subscription: Pick<Subscription, "id">; clientTokenHash: string; now: number },
): Promise<void> {
  assertInTransaction(trx, "subscription");
  await trx
    .updateTable("subscription")
    .set({ client_token_hash: params.clientTokenHash, updated_at: params.now })
    .where("id", "=", params.subscription.id)
    .execute();
}

/** The subscriptions the worker follows: those the chain may still change, oldest first. */
export async function subscriptionsToFollow(
  db: Kysely<Database>,
  params: { chainId: number; limit: number; after?: { createdAt: number; id: string } },
): Promise<Subscription[]> {
  const after = params.after;
  const rows = await db
    .selectFrom("subscription")
    .selectAll()
    .where("chain_id", "=", params.chainId)
    .$if(after !== undefined, (query) =>
      query.where((eb) =>
        eb.or([
          eb("created_at", ">", after!.createdAt),
          eb.and([eb("created_at", "=", after!.createdAt), eb("id", ">", after!.id)]),
        ]),
      ),
    )
    .where((eb) =>
      eb.or([
        eb("status", "in", ["active", "past_due"]),
        // Waiting (or expired) with terms issued: a registration may still come.
        eb.and([eb("status", "in", ["awaiting_authorization", "expired"]), eb("onchain_id", "is not", null)]),
        eb.and([eb("status", "=", "awaiting_authorization"), eb("expires_at", "<=", Date.now())]),
      ]),
    )
    .orderBy("created_at")
    .orderBy("id")
    .limit(params.limit)
    .execute();
  return rows.map(toSubscription);
}
