import { isAddressEqual } from "viem";
import type { AppContext } from "../app-context.js";
import { networkByChainId } from "../config/enabled-networks.js";
import { indexReadGate } from "../indexed/chain-activity.js";
import { confirmationsOf } from "../indexed/confirmations.js";
import { getOrder } from "../orders/order-record.js";
import { DISPATCHER_NAME } from "../outbox/dispatcher.js";
import { recordEvent } from "../outbox/record-event.js";
import { checksum } from "../values/checksum-address.js";
import { type Worker, wakeWorker } from "../workers/run-worker.js";
import { issuedVouchers, pendingMints, type SeenMint, transitionCertificate } from "./certificate-record.js";

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
  // While the indexer is idle no mint can appear: the index is read once a second, not five times.
  const indexGate = indexReadGate(1_000);
  return {
    name: "mint-confirmer",
    intervalMs: options.intervalMs ?? 200,
    async tick() {
      if (!indexGate()) return;
      const nowSeconds = Math.floor(Date.now() / 1000);
      const seen = await pendingMints(context.store, { limit: BATCH });
      const vouchers = await issuedVouchers(context.store, {
        afterOrderId: cursor,
        deadlineAfterSeconds: nowSeconds - STALE_VOUCHER_GRACE_SECONDS,
        limit: BATCH,
      });
      // A short batch reached the end: the next tick starts again from the first voucher.
      cursor = vouchers.length < BATCH ? "" : (vouchers.at(-1)?.orderId ?? "");
      const waiting = [...seen, ...vouchers];
      if (waiting.length === 0) return;
      const mints = await context.indexed.certificateMints({ purchaseIds: waiting.map((certificate) => certificate.purchaseId) });
      const heads = await context.indexed.heads();
      const now = Date.now();
      for (const certificate of waiting) {
        const mint = mints.find(
          (candidate) =>
            candidate.purchaseId === certificate.purchaseId.toLowerCase() &&
            candidate.chainId === certificate.chainId &&
            isAddressEqual(candidate.contract, certificate.contract),
        );
        const network = networkByChainId(context, certificate.chainId);
        const head = heads.get(certificate.chainId)?.blockNumber;
        if (mint === undefined || network === undefined || head === undefined) continue;
        const seenMint: SeenMint = {
          transactionHash: mint.transactionHash,
          blockNumber: mint.blockNumber,
          buyer: mint.buyer,
          confirmations: confirmationsOf(mint, head),
          required: network.confirmations,
        };
        if (seenMint.confirmations < seenMint.required) {
          if (certificate.status !== "pending") {
            await context.store
              .transaction()
              .execute((trx) =>
                transitionCertificate(trx, { orderId: certificate.orderId, transition: "seeMint", input: seenMint, now }),
              );
          }
          continue;
        }
        const minted = await context.store.transaction().execute(async (trx) => {
          const updated = await transitionCertificate(trx, {
            orderId: certificate.orderId,
            transition: "confirmMint",
            input: seenMint,
            now,
          });
          if (!updated.moved) return false;
          const order = await getOrder(trx, certificate.orderId);
          await recordEvent(trx, {
            partnerId: order.partnerId,
            type: "certificate.minted",
            orderingKey: order.id,
            now,
            data: {
              externalOrderId: order.externalOrderId,
              orderId: order.id,
              purchaseId: order.purchaseId,
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
