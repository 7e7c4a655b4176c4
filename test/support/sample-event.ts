import type { EventData, EventType } from "../../api/outbox/event-types.js";

/**
 * A complete `purchase.settled` data object for tests of the outbox's delivery
 * mechanics (ordering, retries, signatures), which record events directly rather
 * than by settling a payment. Typed by the event's declaration, so it stays one.
 */
export function sampleSettledData(orderId: string, extra: { externalOrderId?: string } = {}): EventData<"purchase.settled"> {
  return {
    externalOrderId: extra.externalOrderId ?? `ext-${orderId}`,
    orderId,
    purchaseId: `0x${"ab".repeat(32)}`,
    sessionId: `cs_${orderId}`,
    transactionHash: `0x${"cd".repeat(32)}`,
    logIndex: 0,
    network: "local",
    chainId: 31337,
    blockNumber: "1",
    confirmations: 1,
    payer: `0x${"11".repeat(20)}`,
    recipient: `0x${"22".repeat(20)}`,
    tokenAddress: `0x${"33".repeat(20)}`,
    totalPriceUsdc: "1000000",
    amountPaid: "1000000",
    certificate: { enabled: false },
    settledAt: new Date(0).toISOString(),
  };
}

const SAMPLES: { [type in EventType]?: (orderId: string) => EventData<type> } = {
  "purchase.settled": (orderId) => sampleSettledData(orderId),
  "reward.claimed": (orderId) => ({
    externalOrderId: `ext-${orderId}`,
    orderId,
    purchaseId: `0x${"ab".repeat(32)}`,
    rewardId: `rw_${orderId}`,
    recipient: `0x${"44".repeat(20)}`,
    amount: "10000",
    transactionHash: `0x${"ef".repeat(32)}`,
    network: "local",
    chainId: 31337,
    contract: `0x${"55".repeat(20)}`,
    funder: `0x${"66".repeat(20)}`,
    blockNumber: "1",
    claimedAt: new Date(0).toISOString(),
  }),
  "order.fulfilled": (orderId) => ({
    externalOrderId: `ext-${orderId}`,
    orderId,
    purchaseId: `0x${"ab".repeat(32)}`,
    fulfilmentReference: `ship-${orderId}`,
  }),
};

/** A complete data object of one of the types the outbox tests record directly. */
export function sampleEventData<type extends EventType>(type: type, orderId: string): EventData<type> {
  const make = SAMPLES[type] as ((orderId: string) => EventData<type>) | undefined;
  if (make === undefined) throw new Error(`no sample data for ${type}`);
  return make(orderId);
}
