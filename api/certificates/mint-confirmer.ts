import type { Hex } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../app-context.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { recordEvent } from "../outbox/record-event.js";
import { confirmationsOf } from "../settlement/record-transfer.js";
import { type Worker, wakeWorker } from "../workers/run-worker.js";

/**
 * Moves certificates along as the indexer sees their mint: `pending` while the
 * mint block lacks confirmations, then `minted` with `certificate.minted`.
 */
export function mintConfirmer(context: AppContext, options: { intervalMs?: number } = {}): Worker {
  return {
    name: "mint-confirmer",
    intervalMs: options.intervalMs ?? 200,
    async tick() {
      const waiting = await context.store
        .selectFrom("certificate")
        .selectAll()
        .where("status", "in", ["voucher_issued", "pending"])
        .limit(500)
        .execute();
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
              contract: mint.contract,
              tokenId: mint.tokenId.toString(),
              owner: mint.buyer,
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
