import { periodAdjustmentWorker } from "./accounting/period-adjustment-worker.js";
import { reconciliationWorker } from "./accounting/reconciliation-worker.js";
import type { AppContext } from "./app-context.js";
import { mintConfirmer } from "./certificates/mint-confirmer.js";
import { relayWorker } from "./gasless/relay-worker.js";
import { webhookDispatcher } from "./outbox/dispatcher.js";
import { reservationWorker } from "./purchases/reservation-worker.js";
import { returnRefundedPurchaseUnits } from "./purchases/reservations.js";
import { refundWorker } from "./refunds/refund-worker.js";
import { rewardClaimWorker } from "./rewards/reward-claim-worker.js";
import { settlementWorker } from "./settlement/settlement-worker.js";
import { subscriptionWorker } from "./subscriptions/subscription-worker.js";
import type { Worker } from "./workers/run-worker.js";

/**
 * Every background worker of the service, started once per API process
 * (`WORKERS=off` disables them in a process that should only serve HTTP).
 */
export function serviceWorkers(context: AppContext): Worker[] {
  return [
    wokenByIndex(settlementWorker(context)),
    wokenByIndex(mintConfirmer(context)),
    // Woken in-process by whoever writes an event (wakeWorker), so not by the index.
    webhookDispatcher(context),
    reservationWorker(context),
    relayWorker(context),
    wokenByIndex(rewardClaimWorker(context)),
    // A full refund gives an RWA purchase's units back (api/refunds/fully-refunded.ts).
    wokenByIndex(refundWorker(context, { alsoOnFullRefund: returnRefundedPurchaseUnits })),
    // Subscriptions follow the index (registrations, charges, cancels) and the chain's clock.
    wokenByIndex(subscriptionWorker(context)),
    // Accounting (docs/accounting.md): every payment address checked against the chain.
    reconciliationWorker(context),
    // Closed periods: later facts touching a closed range found as adjustments.
    periodAdjustmentWorker(context),
  ];
}

/** Its work comes with new indexed data: the index's notifications wake it (docs/operations.md). */
function wokenByIndex(worker: Worker): Worker {
  return { ...worker, wokenByIndex: true };
}
