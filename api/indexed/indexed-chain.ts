import type { ReadonlyDrizzle } from "ponder";
import { and, asc, desc, eq, gt, gte, inArray, lte, or, sql } from "ponder";
import type { Address, Hex } from "viem";
import type * as ponderSchema from "../../ponder.schema";
import { IndexNotReadyError } from "../http/unavailable-problems.js";

export type PonderSchema = typeof ponderSchema;
export type PonderDb = ReadonlyDrizzle<PonderSchema>;

/** A canonical-USDC transfer as the indexer recorded it (addresses lower-case). */
export type IndexedTransfer = {
  chainId: number;
  transactionHash: Hex;
  logIndex: number;
  token: Address;
  from: Address;
  to: Address;
  value: bigint;
  blockNumber: bigint;
  blockHash: Hex;
  blockTimestamp: bigint;
  transactionIndex: number;
};

export type TransferPosition = { chainId: number; blockNumber: bigint; logIndex: number };

export type TransferFilter = {
  chainIds?: number[];
  transactionHash?: Hex;
  /** Transfers of any of these transactions (a few hundred at most per call). */
  transactionHashes?: Hex[];
  from?: Address;
  to?: Address[];
  /** Transfers from or to any of these (the books of payment addresses: money in and out). */
  involving?: Address[];
  fromBlock?: bigint;
  toBlock?: bigint;
  after?: TransferPosition;
  limit: number;
};

export type IndexedCertificateMint = {
  chainId: number;
  contract: Address;
  tokenId: bigint;
  purchaseId: Hex;
  buyer: Address;
  transactionHash: Hex;
  logIndex: number;
  blockNumber: bigint;
  blockTimestamp: bigint;
};

/** A `RewardClaimed` log of a reward distributor (addresses and hashes lower-case). */
export type IndexedRewardClaim = {
  chainId: number;
  contract: Address;
  rewardId: Hex;
  funder: Address;
  recipient: Address;
  token: Address;
  amount: bigint;
  transactionHash: Hex;
  logIndex: number;
  blockNumber: bigint;
  blockHash: Hex;
  blockTimestamp: bigint;
};

export type RewardClaimFilter = {
  chainIds?: number[];
  rewardIds?: Hex[];
  /** Claims of any of these transactions (a few hundred at most per call). */
  transactionHashes?: Hex[];
  funders?: Address[];
  fromBlock?: bigint;
  toBlock?: bigint;
  /** Claims after this one in (block, log index) order, on one chain (paging). */
  after?: { blockNumber: bigint; logIndex: number };
  limit?: number;
};

/** The manager's facts about some subscriptions (ids, hashes and addresses lower-case). */
export type IndexedSubscriptionFacts = {
  subscribed: { subscriptionId: Hex; subscriber: Address; payee: Address; blockNumber: bigint; blockTimestamp: bigint }[];
  charged: {
    subscriptionId: Hex;
    periodIndex: bigint;
    amount: bigint;
    transactionHash: Hex;
    logIndex: number;
    blockNumber: bigint;
  }[];
  cancelled: { subscriptionId: Hex; by: Address; transactionHash: Hex; blockNumber: bigint }[];
};

export type IndexedHead = { chainId: number; blockNumber: bigint; blockTimestamp: bigint };

/**
 * Read access to what Ponder indexed. Everything here is a plain query on the
 * indexed tables: no RPC, so a lookup costs one database round trip.
 */
export type IndexedChain = {
  transfers(filter: TransferFilter): Promise<IndexedTransfer[]>;
  transfersByHash(transactionHash: Hex): Promise<IndexedTransfer[]>;
  certificateMints(filter: {
    purchaseIds?: Hex[];
    transactionHash?: Hex;
    buyer?: Address;
    tokenId?: bigint;
  }): Promise<IndexedCertificateMint[]>;
  revokedPurchaseIds(purchaseIds: Hex[]): Promise<Set<string>>;
  /** Reward claims in chain order (chain, block, log), oldest first; at most `limit` (default 500). */
  rewardClaims(filter: RewardClaimFilter): Promise<IndexedRewardClaim[]>;
  /** What one subscription manager's events say of these on-chain ids (a few hundred at most per call). */
  subscriptionFacts(params: { chainId: number; manager: Address; ids: Hex[] }): Promise<IndexedSubscriptionFacts>;
  /** Of these transactions, those that charged a subscription (a `Charged` log of the manager): lower-case hashes. */
  subscriptionChargeTransactions(params: { chainId: number; manager: Address; transactionHashes: Hex[] }): Promise<Set<string>>;
  /** The newest block the indexer has processed, per chain. */
  heads(): Promise<Map<number, IndexedHead>>;
  /** The index just committed a block (its notification): the next `heads()` reads again, not a read started before. */
  forgetHeads(): void;
  /**
   * Per address (lower case), the sums of the transfers it received and sent within
   * [fromBlock, toBlock] on one chain, added up in the index's own SQL (accounting:
   * the balance of an address before a range, and the health check of every address).
   */
  transferTotals(params: {
    chainId: number;
    addresses: Address[];
    fromBlock: bigint;
    toBlock: bigint;
  }): Promise<Map<string, { received: bigint; sent: bigint }>>;
};

/**
 * The longest a read of the index may take before the request answers `503
 * index_not_ready` (Retry-After) instead of waiting: while Ponder backfills on the
 * embedded database, a read can queue behind its writes (issue 30).
 */
const INDEX_READ_TIMEOUT_MS = 5_000;

function bounded<value>(read: Promise<value>): Promise<value> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new IndexNotReadyError(`no answer within ${INDEX_READ_TIMEOUT_MS} ms`)),
      INDEX_READ_TIMEOUT_MS,
    );
  });
  return Promise.race([read, timeout]).finally(() => clearTimeout(timer));
}

/** How stale a cached indexed head may be; the settlement worker polls every 20 ms. */
const HEADS_TTL_MS = 15;

const lower = <value extends string>(value: value) => value.toLowerCase() as value;

/**
 * The keyset condition "after this transfer" in (chain, block, log index) order. On one
 * chain (every accounting read) it is written as a bound on the block number and a tie
 * break, which the planner estimates well: it walks the (chain, block) index and stops
 * at the page's limit. The row comparison it replaces there was estimated at one row,
 * so the planner read every transfer of the range and sorted them for each page of an
 * export (bench/README.md, "Books"). Across chains the row comparison stays.
 */
function transfersAfter(
  usdcTransfer: PonderSchema["usdcTransfer"],
  after: TransferPosition,
  chainIds: readonly number[] | undefined,
) {
  if (chainIds?.length === 1 && chainIds[0] === after.chainId)
    return and(
      gte(usdcTransfer.blockNumber, after.blockNumber),
      or(gt(usdcTransfer.blockNumber, after.blockNumber), gt(usdcTransfer.logIndex, after.logIndex)),
    );
  return sql`(${usdcTransfer.chainId}, ${usdcTransfer.blockNumber}, ${usdcTransfer.logIndex}) > (${after.chainId}, ${after.blockNumber}, ${after.logIndex})`;
}

export function createIndexedChain({ db, schema }: { db: PonderDb; schema: PonderSchema }): IndexedChain {
  const { usdcTransfer, certificateMint, certificateRevocation, rewardClaim } = schema;
  const { subscriptionSubscribed, subscriptionCharged, subscriptionCancelled } = schema;
  let headsCache: { at: number; value: Promise<Map<number, IndexedHead>> } | undefined;

  const toTransfer = (row: typeof usdcTransfer.$inferSelect): IndexedTransfer => ({
    ...row,
    token: lower(row.token as Address),
    from: lower(row.from as Address),
    to: lower(row.to as Address),
    transactionHash: lower(row.transactionHash as Hex),
    blockHash: row.blockHash as Hex,
  });

  return {
    async transfers(filter) {
      const conditions = [
        filter.chainIds && inArray(usdcTransfer.chainId, filter.chainIds),
        filter.transactionHash && eq(usdcTransfer.transactionHash, lower(filter.transactionHash)),
        filter.transactionHashes && inArray(usdcTransfer.transactionHash, filter.transactionHashes.map(lower)),
        filter.from && eq(usdcTransfer.from, lower(filter.from)),
        filter.to && inArray(usdcTransfer.to, filter.to.map(lower)),
        filter.involving &&
          or(inArray(usdcTransfer.from, filter.involving.map(lower)), inArray(usdcTransfer.to, filter.involving.map(lower))),
        filter.fromBlock !== undefined && gte(usdcTransfer.blockNumber, filter.fromBlock),
        filter.toBlock !== undefined && lte(usdcTransfer.blockNumber, filter.toBlock),
        filter.after && transfersAfter(usdcTransfer, filter.after, filter.chainIds),
      ].filter((condition) => condition !== undefined && condition !== false);
      const rows = await bounded(
        db
          .select()
          .from(usdcTransfer)
          .where(and(...conditions))
          .orderBy(asc(usdcTransfer.chainId), asc(usdcTransfer.blockNumber), asc(usdcTransfer.logIndex))
          .limit(filter.limit),
      );
      return rows.map(toTransfer);
    },

    async transfersByHash(transactionHash) {
      const rows = await bounded(
        db
          .select()
          .from(usdcTransfer)
          .where(eq(usdcTransfer.transactionHash, lower(transactionHash)))
          .orderBy(asc(usdcTransfer.logIndex)),
      );
      return rows.map(toTransfer);
    },

    async certificateMints(filter) {
      const conditions = [
        filter.purchaseIds && inArray(certificateMint.purchaseId, filter.purchaseIds.map(lower)),
        filter.transactionHash && eq(certificateMint.transactionHash, lower(filter.transactionHash)),
        filter.buyer && eq(certificateMint.buyer, lower(filter.buyer)),
        filter.tokenId !== undefined && eq(certificateMint.tokenId, filter.tokenId),
      ].filter((condition) => condition !== undefined && condition !== false);
      const rows = await bounded(
        db
          .select()
          .from(certificateMint)
          .where(and(...conditions))
          .orderBy(desc(certificateMint.blockNumber))
          .limit(500),
      );
      return rows.map((row) => ({
        ...row,
        contract: lower(row.contract as Address),
        purchaseId: lower(row.purchaseId as Hex),
        buyer: lower(row.buyer as Address),
        transactionHash: lower(row.transactionHash as Hex),
      }));
    },

    async revokedPurchaseIds(purchaseIds) {
      if (purchaseIds.length === 0) return new Set();
      const rows = await bounded(
        db
          .select({ purchaseId: certificateRevocation.purchaseId })
          .from(certificateRevocation)
          .where(inArray(certificateRevocation.purchaseId, purchaseIds.map(lower))),
      );
      return new Set(rows.map((row) => lower(row.purchaseId)));
    },

    async rewardClaims(filter) {
      const conditions = [
        filter.chainIds && inArray(rewardClaim.chainId, filter.chainIds),
        filter.rewardIds && inArray(rewardClaim.rewardId, filter.rewardIds.map(lower)),
        filter.transactionHashes && inArray(rewardClaim.transactionHash, filter.transactionHashes.map(lower)),
        filter.funders && inArray(rewardClaim.funder, filter.funders.map(lower)),
        filter.fromBlock !== undefined && gte(rewardClaim.blockNumber, filter.fromBlock),
        filter.toBlock !== undefined && lte(rewardClaim.blockNumber, filter.toBlock),
        filter.after &&
          and(
            gte(rewardClaim.blockNumber, filter.after.blockNumber),
            or(gt(rewardClaim.blockNumber, filter.after.blockNumber), gt(rewardClaim.logIndex, filter.after.logIndex)),
          ),
      ].filter((condition) => condition !== undefined && condition !== false);
      const rows = await db
        .select()
        .from(rewardClaim)
        .where(and(...conditions))
        .orderBy(asc(rewardClaim.chainId), asc(rewardClaim.blockNumber), asc(rewardClaim.logIndex))
        .limit(filter.limit ?? 500);
      return rows.map((row) => ({
        ...row,
        contract: lower(row.contract as Address),
        rewardId: lower(row.rewardId as Hex),
        funder: lower(row.funder as Address),
        recipient: lower(row.recipient as Address),
        token: lower(row.token as Address),
        transactionHash: lower(row.transactionHash as Hex),
        blockHash: lower(row.blockHash as Hex),
      }));
    },

    async subscriptionChargeTransactions(params) {
      if (params.transactionHashes.length === 0) return new Set<string>();
      const rows = await bounded(
        db
          .select({ transactionHash: subscriptionCharged.transactionHash })
          .from(subscriptionCharged)
          .where(
            and(
              eq(subscriptionCharged.chainId, params.chainId),
              eq(subscriptionCharged.contract, lower(params.manager)),
              inArray(subscriptionCharged.transactionHash, [...new Set(params.transactionHashes.map(lower))]),
            ),
          ),
      );
      return new Set(rows.map((row) => lower(row.transactionHash as Hex)));
    },

    async subscriptionFacts(params) {
      const facts: IndexedSubscriptionFacts = { subscribed: [], charged: [], cancelled: [] };
      if (params.ids.length === 0) return facts;
      const ids = params.ids.map(lower);
      const manager = lower(params.manager);
      const [subscribed, charged, cancelled] = await bounded(
        Promise.all([
          db
            .select()
            .from(subscriptionSubscribed)
            .where(
              and(
                eq(subscriptionSubscribed.chainId, params.chainId),
                eq(subscriptionSubscribed.contract, manager),
                inArray(subscriptionSubscribed.subscriptionId, ids),
              ),
            ),
          db
            .select()
            .from(subscriptionCharged)
            .where(
              and(
                eq(subscriptionCharged.chainId, params.chainId),
                eq(subscriptionCharged.contract, manager),
                inArray(subscriptionCharged.subscriptionId, ids),
              ),
            ),
          db
            .select()
            .from(subscriptionCancelled)
            .where(
              and(
                eq(subscriptionCancelled.chainId, params.chainId),
                eq(subscriptionCancelled.contract, manager),
                inArray(subscriptionCancelled.subscriptionId, ids),
              ),
            ),
        ]),
      );
      facts.subscribed = subscribed.map((row) => ({
        subscriptionId: lower(row.subscriptionId as Hex),
        subscriber: lower(row.subscriber as Address),
        payee: lower(row.payee as Address),
        blockNumber: row.blockNumber,
        blockTimestamp: row.blockTimestamp,
      }));
      facts.charged = charged.map((row) => ({
        subscriptionId: lower(row.subscriptionId as Hex),
        periodIndex: row.periodIndex,
        amount: row.amount,
        transactionHash: lower(row.transactionHash as Hex),
        logIndex: row.logIndex,
        blockNumber: row.blockNumber,
      }));
      facts.cancelled = cancelled.map((row) => ({
        subscriptionId: lower(row.subscriptionId as Hex),
        by: lower(row.by as Address),
        transactionHash: lower(row.transactionHash as Hex),
        blockNumber: row.blockNumber,
      }));
      return facts;
    },

    async transferTotals(params) {
      const totals = new Map<string, { received: bigint; sent: bigint }>();
      const addresses = params.addresses.map(lower);
      if (addresses.length === 0 || params.fromBlock > params.toBlock) return totals;
      for (const address of addresses) totals.set(address, { received: 0n, sent: 0n });
      const inRange = and(
        eq(usdcTransfer.chainId, params.chainId),
        gte(usdcTransfer.blockNumber, params.fromBlock),
        lte(usdcTransfer.blockNumber, params.toBlock),
      );
      const [received, sent] = await Promise.all([
        db
          .select({ address: usdcTransfer.to, total: sql<string>`sum(${usdcTransfer.value})::text` })
          .from(usdcTransfer)
          .where(and(inRange, inArray(usdcTransfer.to, addresses)))
          .groupBy(usdcTransfer.to),
        db
          .select({ address: usdcTransfer.from, total: sql<string>`sum(${usdcTransfer.value})::text` })
          .from(usdcTransfer)
          .where(and(inRange, inArray(usdcTransfer.from, addresses)))
          .groupBy(usdcTransfer.from),
      ]);
      // numeric sums come back as exact decimal text (a cast, so no driver turns them into floats).
      for (const row of received) {
        const entry = totals.get(lower(row.address));
        if (entry) entry.received = BigInt(String(row.total).split(".")[0] ?? "0");
      }
      for (const row of sent) {
        const entry = totals.get(lower(row.address));
        if (entry) entry.sent = BigInt(String(row.total).split(".")[0] ?? "0");
      }
      return totals;
    },

    heads() {
      // Every request and worker tick asks; one query per HEADS_TTL_MS answers them all.
      if (headsCache === undefined || Date.now() - headsCache.at > HEADS_TTL_MS) {
        const value = readHeads();
        headsCache = { at: Date.now(), value };
        // A failed read is not kept: the next caller asks again (unless a newer read replaced it).
        value.catch(() => {
          if (headsCache?.value === value) headsCache = undefined;
        });
      }
      return headsCache.value;
    },

    forgetHeads() {
      headsCache = undefined;
    },
  };

  async function readHeads(): Promise<Map<number, IndexedHead>> {
    // Ponder keeps its progress per chain in `_ponder_checkpoint`; a checkpoint
    // string encodes timestamp (10 digits), chain id (16) and block number (16).
    const result = await bounded(db.execute(sql`select chain_id, latest_checkpoint from _ponder_checkpoint`));
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as {
      chain_id: number | string;
      latest_checkpoint: string;
    }[];
    const heads = new Map<number, IndexedHead>();
    for (const row of rows) {
      const checkpoint = row.latest_checkpoint;
      heads.set(Number(row.chain_id), {
        chainId: Number(row.chain_id),
        blockTimestamp: BigInt(checkpoint.slice(0, 10)),
        blockNumber: BigInt(checkpoint.slice(26, 42)),
      });
    }
    return heads;
  }
}
