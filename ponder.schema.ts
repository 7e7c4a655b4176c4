import { index, onchainTable, primaryKey } from "ponder";

/**
 * One table per on-chain fact. Lookup keys live in the primary key because
 * Ponder creates `index()` indexes only after the historical backfill.
 */

/** A canonical-USDC transfer into or out of one of our payment addresses (stored once if both). */
export const usdcTransfer = onchainTable(
  "usdc_transfer",
  (t) => ({
    transactionHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    chainId: t.integer().notNull(),
    token: t.hex().notNull(),
    from: t.hex().notNull(),
    to: t.hex().notNull(),
    value: t.bigint().notNull(),
    blockNumber: t.bigint().notNull(),
    blockHash: t.hex().notNull(),
    blockTimestamp: t.bigint().notNull(),
    transactionIndex: t.integer().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.transactionHash, table.logIndex, table.chainId] }),
    recipientIndex: index().on(table.to, table.blockNumber),
    senderIndex: index().on(table.from, table.blockNumber),
    blockIndex: index().on(table.chainId, table.blockNumber),
  }),
);

/** A certificate minted by `claim(voucher, signature)`. Token id = uint256(purchase id). */
export const certificateMint = onchainTable(
  "certificate_mint",
  (t) => ({
    chainId: t.integer().notNull(),
    contract: t.hex().notNull(),
    tokenId: t.bigint().notNull(),
    purchaseId: t.hex().notNull(),
    buyer: t.hex().notNull(),
    transactionHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.purchaseId, table.chainId, table.contract] }),
    transactionIndex: index().on(table.transactionHash),
    buyerIndex: index().on(table.buyer),
    tokenIndex: index().on(table.tokenId),
  }),
);

/** A certificate burned by the contract owner. */
export const certificateRevocation = onchainTable(
  "certificate_revocation",
  (t) => ({
    chainId: t.integer().notNull(),
    contract: t.hex().notNull(),
    tokenId: t.bigint().notNull(),
    purchaseId: t.hex().notNull(),
    reason: t.text().notNull(),
    transactionHash: t.hex().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.purchaseId, table.chainId, table.contract] }),
  }),
);

/** A reward paid by the distributor's `claim(voucher, signature)`; the reward id is keccak256 of its API id. */
export const rewardClaim = onchainTable(
  "reward_claim",
  (t) => ({
    chainId: t.integer().notNull(),
    contract: t.hex().notNull(),
    rewardId: t.hex().notNull(),
    funder: t.hex().notNull(),
    recipient: t.hex().notNull(),
    token: t.hex().notNull(),
    amount: t.bigint().notNull(),
    transactionHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    blockNumber: t.bigint().notNull(),
    blockHash: t.hex().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.chainId, table.transactionHash, table.logIndex] }),
    rewardIndex: index().on(table.rewardId),
    funderIndex: index().on(table.funder),
    blockIndex: index().on(table.chainId, table.blockNumber),
  }),
);

/**
 * Terms registered with the subscription manager (`subscribe` or `subscribeWithPermit`). The id is the
 * terms' EIP-712 hash, registered at most once per manager, so it keys the row. `period`, `start` and
 * `end` are Unix seconds (uint48); `end` is 2^48 - 1 when the terms never run out.
 */
export const subscriptionSubscribed = onchainTable(
  "subscription_subscribed",
  (t) => ({
    chainId: t.integer().notNull(),
    contract: t.hex().notNull(),
    subscriptionId: t.hex().notNull(),
    subscriber: t.hex().notNull(),
    payee: t.hex().notNull(),
    token: t.hex().notNull(),
    amount: t.bigint().notNull(),
    period: t.bigint().notNull(),
    start: t.bigint().notNull(),
    end: t.bigint().notNull(),
    transactionHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    blockNumber: t.bigint().notNull(),
    blockHash: t.hex().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.subscriptionId, table.chainId, table.contract] }),
    subscriberIndex: index().on(table.subscriber),
    payeeIndex: index().on(table.payee),
  }),
);

/** One period charged by `charge(id)`: the contract charges each period index at most once. */
export const subscriptionCharged = onchainTable(
  "subscription_charged",
  (t) => ({
    chainId: t.integer().notNull(),
    contract: t.hex().notNull(),
    subscriptionId: t.hex().notNull(),
    periodIndex: t.bigint().notNull(),
    amount: t.bigint().notNull(),
    transactionHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    blockNumber: t.bigint().notNull(),
    blockHash: t.hex().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.subscriptionId, table.periodIndex, table.chainId, table.contract] }),
    transactionIndex: index().on(table.transactionHash),
    blockIndex: index().on(table.chainId, table.blockNumber),
  }),
);

/** A subscription stopped on chain, by its subscriber or payee (`cancel`) or the subscriber's signature. */
export const subscriptionCancelled = onchainTable(
  "subscription_cancelled",
  (t) => ({
    chainId: t.integer().notNull(),
    contract: t.hex().notNull(),
    subscriptionId: t.hex().notNull(),
    by: t.hex().notNull(),
    transactionHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    blockNumber: t.bigint().notNull(),
    blockHash: t.hex().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.subscriptionId, table.chainId, table.contract] }),
  }),
);
