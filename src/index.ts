import { type IndexingFunctionArgs, ponder } from "ponder:registry";
import {
  certificateMint,
  certificateRevocation,
  rewardClaim,
  subscriptionCancelled,
  subscriptionCharged,
  subscriptionSubscribed,
  usdcTransfer,
} from "ponder:schema";

// Indexing functions only: each records one on-chain fact, deterministically.
// Matching, settlement and everything partners see happen outside `src/`.

// One handler for both directions (`USDC` is money in, `USDCOut` money out of a payment address).
// An upsert of the same row, not `onConflictDoNothing`: when the COMMIT of a block fails (its
// connection ended, as in a Postgres restart), Ponder 0.16.10 runs the block again with its
// indexing cache still holding the rows of the failed attempt, so an insert that does nothing on
// a cached row would be skipped and the transfer never written (test/fleet.test.ts). An update of
// a cached row is flushed as `INSERT … ON CONFLICT DO UPDATE`, which writes it again.
const recordTransfer = async ({ event, context }: IndexingFunctionArgs<"USDC:Transfer">) => {
  const row = {
    transactionHash: event.transaction.hash,
    logIndex: event.log.logIndex,
    chainId: context.chain.id,
    token: event.log.address,
    from: event.args.from,
    to: event.args.to,
    value: event.args.value,
    blockNumber: event.block.number,
    blockHash: event.block.hash,
    blockTimestamp: event.block.timestamp,
    transactionIndex: event.transaction.transactionIndex,
  };
  await context.db.insert(usdcTransfer).values(row).onConflictDoUpdate(row);
};
ponder.on("USDC:Transfer", recordTransfer);
ponder.on("USDCOut:Transfer", recordTransfer);

ponder.on("Certificate:CertificateClaimed", async ({ event, context }) => {
  await context.db
    .insert(certificateMint)
    .values({
      chainId: context.chain.id,
      contract: event.log.address,
      tokenId: event.args.tokenId,
      purchaseId: event.args.purchaseId,
      buyer: event.args.buyer,
      transactionHash: event.transaction.hash,
      logIndex: event.log.logIndex,
      blockNumber: event.block.number,
      blockTimestamp: event.block.timestamp,
    })
    .onConflictDoNothing();
});

ponder.on("Certificate:CertificateRevoked", async ({ event, context }) => {
  await context.db
    .insert(certificateRevocation)
    .values({
      chainId: context.chain.id,
      contract: event.log.address,
      tokenId: event.args.tokenId,
      purchaseId: event.args.purchaseId,
      reason: event.args.reason,
      transactionHash: event.transaction.hash,
      blockNumber: event.block.number,
      blockTimestamp: event.block.timestamp,
    })
    .onConflictDoNothing();
});

ponder.on("RewardDistributor:RewardClaimed", async ({ event, context }) => {
  await context.db
    .insert(rewardClaim)
    .values({
      chainId: context.chain.id,
      contract: event.log.address,
      rewardId: event.args.rewardId,
      funder: event.args.funder,
      recipient: event.args.recipient,
      token: event.args.token,
      amount: event.args.amount,
      transactionHash: event.transaction.hash,
      logIndex: event.log.logIndex,
      blockNumber: event.block.number,
      blockHash: event.block.hash,
      blockTimestamp: event.block.timestamp,
    })
    .onConflictDoNothing();
});

ponder.on("SubscriptionManager:Subscribed", async ({ event, context }) => {
  await context.db
    .insert(subscriptionSubscribed)
    .values({
      chainId: context.chain.id,
      contract: event.log.address,
      subscriptionId: event.args.id,
      subscriber: event.args.subscriber,
      payee: event.args.payee,
      token: event.args.token,
      amount: event.args.amount,
      period: BigInt(event.args.period),
      start: BigInt(event.args.start),
      end: BigInt(event.args.end),
      transactionHash: event.transaction.hash,
      logIndex: event.log.logIndex,
      blockNumber: event.block.number,
      blockHash: event.block.hash,
      blockTimestamp: event.block.timestamp,
    })
    .onConflictDoNothing();
});

ponder.on("SubscriptionManager:Charged", async ({ event, context }) => {
  await context.db
    .insert(subscriptionCharged)
    .values({
      chainId: context.chain.id,
      contract: event.log.address,
      subscriptionId: event.args.id,
      periodIndex: event.args.periodIndex,
      amount: event.args.amount,
      transactionHash: event.transaction.hash,
      logIndex: event.log.logIndex,
      blockNumber: event.block.number,
      blockHash: event.block.hash,
      blockTimestamp: event.block.timestamp,
    })
    .onConflictDoNothing();
});

ponder.on("SubscriptionManager:Cancelled", async ({ event, context }) => {
  await context.db
    .insert(subscriptionCancelled)
    .values({
      chainId: context.chain.id,
      contract: event.log.address,
      subscriptionId: event.args.id,
      by: event.args.by,
      transactionHash: event.transaction.hash,
      logIndex: event.log.logIndex,
      blockNumber: event.block.number,
      blockHash: event.block.hash,
      blockTimestamp: event.block.timestamp,
    })
    .onConflictDoNothing();
});
