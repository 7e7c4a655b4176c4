import { type Address, getAddress, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionInTransaction } from "../../api/checkout/create-session.js";
import type { CheckoutSession } from "../../api/checkout/session-record.js";
import type { IndexedTransfer } from "../../api/indexed/indexed-chain.js";
import {
  BLOCK_CLOCK_TOLERANCE_MS,
  decideTransfer,
  judgeTransfer,
  newPayment,
  type TransferFacts,
} from "../../api/settlement/record-transfer.js";
import type { Store } from "../../api/store/open-store.js";
import { seedPartnerWithAddress, UNIT_PAY_TO, UNIT_PAYER, UNIT_USDC, unitNetwork, unitStore } from "../support/unit-store.js";

/**
 * Which session a transfer pays. The amount is the reference (total + a sub-cent offset
 * reserved per payment address), so only the exact amount, to that address, on that
 * chain names a session: decided here on a real SQLite store, no chain and no indexer
 * (the transfer is given as the facts the index would hold). Then the pure rules'
 * boundaries (money-rules.test.ts has each reason once; here the instants at which
 * each one starts, and the order in which they are asked).
 */

let store: Store;
let close: () => Promise<void>;
let counter = 0;

beforeAll(async () => {
  ({ store, close } = await unitStore());
  await seedPartnerWithAddress(store);
});
afterAll(async () => close());

const createSession = (externalOrderId: string, total: bigint) =>
  store
    .transaction()
    .execute((trx) =>
      createSessionInTransaction(
        trx,
        { networks: [unitNetwork] },
        {
          partnerId: "ptr_a",
          kind: "commerce",
          externalOrderId,
          externalProductId: "sku",
          productName: "Mug",
          productCategory: "kitchen",
          quantity: 1,
          totalPriceUsdc: total,
          shippingRequired: false,
          certificateEnabled: false,
        },
      ),
    )
    .then((created) => created.session);

const transfer = (change: Partial<IndexedTransfer>): IndexedTransfer => {
  counter++;
  return {
    chainId: 31337,
    transactionHash: `0x${counter.toString(16).padStart(64, "0")}` as Hex,
    logIndex: 0,
    token: UNIT_USDC,
    from: UNIT_PAYER,
    to: UNIT_PAY_TO,
    value: 0n,
    blockNumber: 100n,
    blockHash: `0x${(counter + 1_000_000).toString(16).padStart(64, "0")}` as Hex,
    blockTimestamp: BigInt(Math.floor(Date.now() / 1000) + 1),
    transactionIndex: 0,
    ...change,
  };
};

const decide = (change: Partial<IndexedTransfer>) => store.transaction().execute((trx) => decideTransfer(trx, transfer(change)));

describe("the amount names the session (decideTransfer on a real store)", () => {
  let session: CheckoutSession;
  beforeAll(async () => {
    session = await createSession("match-1", 40_000_000n);
  });

  it("the reserved amount is the total plus an offset under one cent", () => {
    expect(session.amountDue - session.totalPriceUsdc).toBe(BigInt(session.amountOffset));
    expect(session.amountOffset).toBeGreaterThanOrEqual(1);
    expect(session.amountOffset).toBeLessThanOrEqual(9_999);
  });

  it("the exact amount due, to the payment address, on its chain, matches that session", async () => {
    const decision = await decide({ value: session.amountDue });
    expect(decision.kind).toBe("match");
    expect(decision.session?.id).toBe(session.id);
  });

  it("the payment address in upper case still matches (addresses are compared whatever their case)", async () => {
    const decision = await decide({ value: session.amountDue, to: UNIT_PAY_TO.toUpperCase().replace("0X", "0x") as Address });
    expect(decision).toMatchObject({ kind: "match", session: { id: session.id } });
  });

  it.each([
    ["one base unit short", -1n],
    ["one base unit over", 1n],
    ["a whole cent over", 10_000n],
  ])("%s is unmatched and names no session", async (_case, delta) => {
    expect(await decide({ value: session.amountDue + delta })).toEqual({
      kind: "unresolved",
      reason: "unmatched",
      session: undefined,
    });
  });

  it.each([
    ["the price without its reference (the total alone)", () => ({ value: session.totalPriceUsdc })],
    ["zero", () => ({ value: 0n })],
    ["the exact amount to another address", () => ({ value: session.amountDue, to: getAddress(`0x${"ee".repeat(20)}`) })],
    ["the exact amount on another chain", () => ({ value: session.amountDue, chainId: 8453 })],
  ])("%s is unmatched", async (_case, change) => {
    expect(await decide(change())).toMatchObject({ kind: "unresolved", reason: "unmatched", session: undefined });
  });

  it("two sessions of the same price hold different references, and each transfer pays its own", async () => {
    const a = await createSession("match-twin-a", 12_000_000n);
    const b = await createSession("match-twin-b", 12_000_000n);
    expect(a.amountDue).not.toBe(b.amountDue);
    expect((await decide({ value: a.amountDue })).session?.id).toBe(a.id);
    expect((await decide({ value: b.amountDue })).session?.id).toBe(b.id);
  });

  it("the exact amount mined after the session expired is late, and still names it", async () => {
    const minedAt = BigInt(Math.floor(session.expiresAt / 1000) + 60);
    expect(await decide({ value: session.amountDue, blockTimestamp: minedAt })).toMatchObject({
      kind: "unresolved",
      reason: "late",
      session: { id: session.id },
    });
  });

  it("a payment is first recorded with the index's facts: EIP-55 addresses, the block's seconds as ms", () => {
    const indexed = transfer({ value: 5n, from: UNIT_PAYER.toLowerCase() as Address, blockTimestamp: 1_800_000_000n });
    expect(
      newPayment(indexed, { partnerId: "ptr_a", sessionId: null, status: "unresolved", reason: "unmatched", now: 7 }),
    ).toEqual({
      chainId: 31337,
      transactionHash: indexed.transactionHash,
      logIndex: 0,
      partnerId: "ptr_a",
      sessionId: null,
      status: "unresolved",
      reason: "unmatched",
      from: getAddress(UNIT_PAYER),
      to: getAddress(UNIT_PAY_TO),
      amount: 5n,
      blockNumber: 100n,
      blockHash: indexed.blockHash,
      minedAt: 1_800_000_000_000,
      resolution: null,
      createdAt: 7,
      updatedAt: 7,
    });
  });
});

describe("judgeTransfer: where each reason starts", () => {
  const createdAt = Date.UTC(2027, 0, 15, 8, 0, 0, 0);
  const session = { requiredPayer: null, createdAt, expiresAt: createdAt + 1_800_000, lateUntil: createdAt + 86_400_000 };
  const OTHER = "0x00000000000000000000000000000000000000cc" as Address;
  const facts = (change: Partial<TransferFacts>, sessionChange: Partial<TransferFacts["session"]> = {}): TransferFacts => ({
    minedAt: createdAt + 1_000,
    from: UNIT_PAYER,
    referenceReleasedAt: session.lateUntil,
    session: { ...session, ...sessionChange },
    orderTaken: false,
    ...change,
  });

  it.each([
    ["mined at the expiry instant: still in time", facts({ minedAt: session.expiresAt }), { kind: "match" }],
    [
      "mined at the end of the late window: late, still linked",
      facts({ minedAt: session.lateUntil }),
      { kind: "unresolved", reason: "late", linked: true },
    ],
    [
      "mined at the instant the reference was released: it still names the session",
      facts({ minedAt: session.expiresAt + 1, referenceReleasedAt: session.expiresAt + 1 }),
      { kind: "unresolved", reason: "late", linked: true },
    ],
    [
      "past the late window with the wrong payer: late (the window is asked first), unlinked",
      facts({ minedAt: session.lateUntil + 1, referenceReleasedAt: session.lateUntil + 10 }, { requiredPayer: OTHER }),
      { kind: "unresolved", reason: "late", linked: false },
    ],
    [
      "after the reference was released, with the wrong payer: unmatched",
      facts({ referenceReleasedAt: createdAt }, { requiredPayer: OTHER }),
      { kind: "unresolved", reason: "unmatched", linked: false },
    ],
    [
      "before the session with the wrong payer: wrong_payer (the payer is asked before time)",
      facts({ minedAt: createdAt - 1_000 - BLOCK_CLOCK_TOLERANCE_MS }, { requiredPayer: OTHER }),
      { kind: "unresolved", reason: "wrong_payer", linked: true },
    ],
    [
      "before the session, for an order already taken: predates_session (time before the order)",
      facts({ minedAt: createdAt - 1_000 - BLOCK_CLOCK_TOLERANCE_MS, orderTaken: true }),
      { kind: "unresolved", reason: "predates_session", linked: true },
    ],
  ] as const)("%s", (_case, input, expected) => {
    expect(judgeTransfer(input)).toEqual(expected);
  });
});
