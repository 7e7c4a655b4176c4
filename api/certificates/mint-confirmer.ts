import type { Hex } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../app-context.js";
import { checksum } from "../checksum-address.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { recordEvent } from "../outbox/record-event.js";
import { type Worker, wakeWorker } from "../workers/run-worker.js";

/** Certificates of each kind looked up per tick; both batches together stay within one index query (500 mints). */
const BATCH = 250;
/**
 * A voucher past its deadline can no longer be minted; one that was minted in time
 * shows up in the index within this long, after which the voucher is not looked up
 * again (claiming issues a fresh voucher, which is looked up anew).
 */
export const STALE_VOUCHER_GRACE_SECONDS = 24 * 3600;

/**
 * Moves certificates along as the indexer sees their mint: `pending` while the
 * mint block lacks confirmations, then `minted` with `certificate.minted`.
 *
 * Each tick looks at every `pending` certificate (a mint was seen: few, each cost
 * gas) and at the next batch of vouchers after a cursor that goes round all of
 * them. Vouchers that are claimed and never minted cost one pass of the cursor, so
 * they can slow the confirmation of other partners' mints down by a few ticks but
 * never stop it; vouchers past their deadline (plus a grace) drop out of the scan.
 */
export function mintConfirmer(context: AppContext, options: { intervalMs?: number } = {}): Worker {
  let cursor = "";
  return {
    name: "mint-confirmer",
    intervalMs: options.intervalMs ?? 200,
    async tick() {
      const nowSeconds = Math.floor(Date.now() / 1000);
      const seen = await context.store
        .selectFrom("certificate")
        .selectAll()
        .where("status", "=", "pending")
        .orderBy("updated_at")
        .limit(BATCH)
        .execute();
      const vouchers = await context.store
        .selectFrom("certificate")
        .selectAll()
        .where("status", "=", "voucher_issued")
        .where("order_id", ">", cursor)
        .where((eb) =>
          eb.or([eb("voucher_deadline", "is", null), eb("voucher_deadline", ">=", nowSeconds - STALE_VOUCHER_GRACE_SECONDS)]),
        )
        .orderBy("order_id")
        .limit(BATCH)
        .execute();
      // A short batch reached the end: the next tick starts again from the first voucher.
      cursor = vouchers.length < BATCH ? "" : (vouchers.at(-1)?.order_id ?? "");
      const waiting = [...seen, ...vouchers];
      if (waiting.length === 0) return;
      const mints = await context.indexed.certificateMints({ purchaseIds: waiting.map((row) => row.purchase_id as Hex) });
      const heads = await context.indexed.heads();
      const now = Date.now();
      for (const certificate of waiting) {
        const mint = mints.find(
          (candidate) =>
            candidate.purchaseId === certificate.purchase_id &&
            candidate.chainId === certificate.chain_id &&
            candidate.contract === certificate.contract_address,
        );
        const network = networkByChainId(context, certificate.chain_id);
        const head = heads.get(certificate.chain_id)?.blockNumber;
        if (mint === undefined || network === undefined || head === undefined) continue;
        const final = confirmationsOf(mint, head) >= network.confirmations;
        if (!final) {
          if (certificate.status !== "pending") {
            await context.store
              .updateTable("certificate")
              .set({
                status: "pending",
                mint_transaction_hash: mint.transactionHash,
                mint_block_number: Number(mint.blockNumber),
                updated_at: now,
              })
              .where("order_id", "=", certificate.order_id)
              .where("status", "=", "voucher_issued")
              .execute();
          }
          continue;
        }
        const minted = await context.store.transaction().execute(async (trx) => {
          const updated = await trx
            .updateTable("certificate")
            .set({
              status: "minted",
              buyer: mint.buyer,
              mint_transaction_hash: mint.transactionHash,
              mint_block_number: Number(mint.blockNumber),
              minted_at: now,
              updated_at: now,
            })
            .where("order_id", "=", certificate.order_id)
            .where("status", "in", ["voucher_issued", "pending"])
            .executeTakeFirst();
          if (updated.numUpdatedRows !== 1n) return false;
          const order = await trx
            .selectFrom("orders")
            .selectAll()
            .where("id", "=", certificate.order_id)
            .executeTakeFirstOrThrow();
          await recordEvent(trx, {
            partnerId: order.partner_id,
            type: "certificate.minted",
            orderingKey: order.id,
            now,
            data: {
              externalOrderId: order.external_order_id,
              orderId: order.id,
              purchaseId: order.purchase_id,
              transactionHash: mint.transactionHash,
              network: network.name,
              chainId: network.chainId,
              contract: checksum(mint.contract),
              tokenId: mint.tokenId.toString(),
              owner: checksum(mint.buyer),
              blockNumber: mint.blockNumber.toString(),
            },
          });
          return true;
        });
        if (minted) wakeWorker(DISPATCHER_NAME);
      }
    },
  };
}
