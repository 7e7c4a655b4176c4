import { rmSync } from "node:fs";
import { type Address, getAddress, type Hex, keccak256, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fundingCovers } from "../../api/rewards/funding.js";
import { cashbackAmount, withinAmountPaid } from "../../api/rewards/grant-reward.js";
import { revokeUnclaimedRewardsOfOrder } from "../../api/rewards/revoke-reward.js";
import { findReward, insertReward, moveReward, type Reward, rewardTransitions } from "../../api/rewards/reward-record.js";
import { partnerHoldingFunder, provenFunder, rewardSettingsOf, updateRewardSettings } from "../../api/rewards/reward-settings.js";
import { rewardIdOnChain } from "../../api/rewards/reward-voucher.js";
import { migrateStore, openStore, type Store } from "../../api/store/open-store.js";
import { allows, TransitionRefused } from "../../api/store/transition-table.js";
import { newDataDir } from "../support/test-stack.js";
import { seedOrder, unitStore } from "../support/unit-store.js";

const DISTRIBUTOR = "0x00000000000000000000000000000000000000dd" as Address;
const TOKEN = "0x00000000000000000000000000000000000000cc" as Address;
const WALLET = getAddress("0x00000000000000000000000000000000000000ee");
const FUNDER = getAddress("0x00000000000000000000000000000000000000ff");

describe("reward rules (pure)", () => {
  it("cashback is floor(amountPaid × bps / 10 000), in bigint", () => {
    expect(cashbackAmount(12_345_678n, 250)).toBe(308_641n);
    expect(cashbackAmount(39n, 250)).toBe(0n);
    expect(cashbackAmount(10_000n, 10_000)).toBe(10_000n);
    expect(cashbackAmount(2n ** 80n, 1)).toBe(2n ** 80n / 10_000n);
  });

  it("the rewards of an order (revoked and expired aside) stay within the amount paid", () => {
    const rewards = [
      { status: "claimed" as const, amount: 400n },
      { status: "revoked" as const, amount: 500n },
      { status: "expired" as const, amount: 500n },
      { status: "voucher_issued" as const, amount: 100n },
    ];
    expect(withinAmountPaid(rewards, 500n, 1_000n)).toBe(true);
    expect(withinAmountPaid(rewards, 501n, 1_000n)).toBe(false);
  });

  it("funding covers a reward only when allowance and balance both cover it plus the vouchers out", () => {
    expect(fundingCovers({ allowance: 1_000n, balance: 1_000n }, 600n, 400n)).toBe(true);
    expect(fundingCovers({ allowance: 999n, balance: 5_000n }, 600n, 400n)).toBe(false);
    expect(fundingCovers({ allowance: 5_000n, balance: 999n }, 600n, 400n)).toBe(false);
  });

  it("the transition table: revoked and expired are final, claimed only by a reorg; a pending claim cannot be revoked", () => {
    for (const name of Object.keys(rewardTransitions) as (keyof typeof rewardTransitions)[]) {
      expect(allows(rewardTransitions, name, "claimed")).toBe(name === "reorgClaim");
      expect(allows(rewardTransitions, name, "revoked")).toBe(false);
      expect(allows(rewardTransitions, name, "expired")).toBe(false);
    }
    expect(allows(rewardTransitions, "revoke", "pending")).toBe(false);
    expect(allows(rewardTransitions, "revoke", "granted")).toBe(true);
    expect(allows(rewardTransitions, "revoke", "voucher_issued")).toBe(true);
    expect(allows(rewardTransitions, "confirmClaim", "granted")).toBe(false);
  });

  it("the on-chain id is keccak256 of the API id", () => {
    expect(rewardIdOnChain("rw_abc")).toBe(keccak256(toHex("rw_abc")));
    expect(rewardIdOnChain("rw_abc")).not.toBe(rewardIdOnChain("rw_abd"));
  });
});

describe("reward record on a real store", () => {
  let store: Store;
  let close: () => Promise<void>;
  const now = 1_800_000_000_000;

  beforeAll(async () => {
    ({ store, close } = await unitStore());
    await seedOrder(store, { partnerId: "ptr_r", orderId: "ord_r1", purchaseId: `0x${"1".repeat(64)}` });
  });
  afterAll(async () => close());

  const newReward = (source: "grant" | "cashback" = "grant", amount = 1_000n) =>
    store.transaction().execute(async (trx) =>
      insertReward(trx, {
        partnerId: "ptr_r",
        orderId: "ord_r1",
        externalOrderId: "ext-ord_r1",
        source,
        idempotencyKey: null,
        chainId: 31337,
        distributor: DISTRIBUTOR,
        token: TOKEN,
        amount,
        now,
      }),
    );

  const issue = (reward: Reward, deadlineSeconds: bigint, indexedSeconds = 0n) =>
    store.transaction().execute((trx) =>
      moveReward(trx, {
        reward,
        transition: "issueVoucher",
        input: { indexedSeconds, recipient: WALLET, funder: FUNDER, deadlineSeconds },
        now,
      }),
    );

  it("one automatic cashback per order, whatever the retries", async () => {
    expect(await newReward("cashback")).toBeDefined();
    expect(await newReward("cashback")).toBeUndefined();
  });

  it("refuses a second voucher while one is out, and a deadline past the claim window", async () => {
    const reward = (await newReward()) as Reward;
    const deadline = BigInt(now / 1000 + 3600);
    const tooLate = await issue(reward, BigInt(reward.expiresAt / 1000) + 1n);
    expect(tooLate).toMatchObject({ moved: false });
    const issued = await issue(reward, deadline);
    expect(issued.moved && issued.reward).toMatchObject({ status: "voucher_issued", recipient: WALLET, funder: FUNDER });
    const current = (await findReward(store, reward.id)) as Reward;
    expect(await issue(current, deadline + 10n, deadline)).toMatchObject({ moved: false });
    // The index past the deadline: a new voucher may be issued.
    expect(await issue(current, deadline + 10n, deadline + 1n)).toMatchObject({ moved: true });
  });

  it("moving from a status the table does not list is a defect", async () => {
    const reward = (await newReward()) as Reward;
    await expect(
      store.transaction().execute((trx) => moveReward(trx, { reward, transition: "dropClaim", input: {}, now })),
    ).rejects.toBeInstanceOf(TransitionRefused);
  });

  it("revokeUnclaimedRewardsOfOrder revokes granted rewards in the caller's transaction, never a voucher still out", async () => {
    await seedOrder(store, { partnerId: "ptr_r", orderId: "ord_r2", purchaseId: `0x${"2".repeat(64)}` });
    const make = () =>
      store.transaction().execute(
        async (trx) =>
          (await insertReward(trx, {
            partnerId: "ptr_r",
            orderId: "ord_r2",
            externalOrderId: "ext-ord_r2",
            source: "grant",
            idempotencyKey: null,
            chainId: 31337,
            distributor: DISTRIBUTOR,
            token: TOKEN,
            amount: 10n,
            now,
          })) as Reward,
      );
    const granted = await make();
    const out = await make();
    await issue(out, BigInt(now / 1000 + 3600));

    // A rolled-back caller leaves everything as it was.
    await expect(
      store.transaction().execute(async (trx) => {
        await revokeUnclaimedRewardsOfOrder(trx, { orderId: "ord_r2", reason: "order_refunded", now });
        throw new Error("refund failed");
      }),
    ).rejects.toThrow("refund failed");
    expect((await findReward(store, granted.id))?.status).toBe("granted");

    const result = await store
      .transaction()
      .execute((trx) => revokeUnclaimedRewardsOfOrder(trx, { orderId: "ord_r2", reason: "order_refunded", now }));
    expect(result.revoked.map((reward) => reward.id)).toEqual([granted.id]);
    expect(result.notRevoked.map((reward) => reward.id)).toEqual([out.id]);
    expect(await findReward(store, granted.id)).toMatchObject({ status: "revoked", revokedReason: "order_refunded" });
    expect((await findReward(store, out.id))?.status).toBe("voucher_issued");

    // Once the index is past the voucher's deadline, the refund's call revokes it too.
    const later = await store.transaction().execute((trx) =>
      revokeUnclaimedRewardsOfOrder(trx, {
        orderId: "ord_r2",
        reason: "order_refunded",
        now,
        indexedSeconds: BigInt(now / 1000 + 3601),
      }),
    );
    expect(later.revoked.map((reward) => reward.id)).toEqual([out.id]);
  });

  it("a voucher out when the order is fully refunded: no new voucher after its deadline, revoked instead (issue 40, finding 3)", async () => {
    await seedOrder(store, { partnerId: "ptr_r", orderId: "ord_r3", purchaseId: `0x${"4".repeat(64)}` });
    const reward = (await store.transaction().execute((trx) =>
      insertReward(trx, {
        partnerId: "ptr_r",
        orderId: "ord_r3",
        externalOrderId: "ext-ord_r3",
        source: "cashback",
        idempotencyKey: null,
        chainId: 31337,
        distributor: DISTRIBUTOR,
        token: TOKEN,
        amount: 10n,
        now,
      }),
    )) as Reward;
    const deadline = BigInt(now / 1000 + 3600);
    await issue(reward, deadline);
    // The refund's transaction, as onOrderFullyRefunded calls it: the index is before the voucher's deadline.
    const refunded = await store
      .transaction()
      .execute((trx) => revokeUnclaimedRewardsOfOrder(trx, { orderId: "ord_r3", reason: "order_refunded", now }));
    expect(refunded.notRevoked.map((row) => row.id)).toEqual([reward.id]);
    const owing = (await findReward(store, reward.id)) as Reward;
    expect(owing).toMatchObject({ status: "voucher_issued", revocationDue: "order_refunded" });

    // The voucher lapsed unclaimed: a new voucher (another wallet) is refused, revoking is not.
    const reissued = await issue(owing, deadline + 3600n, deadline + 1n);
    expect(reissued).toMatchObject({ moved: false, reason: "the reward is to be revoked (order_refunded)" });
    const revoked = await store.transaction().execute((trx) =>
      moveReward(trx, {
        reward: owing,
        transition: "revoke",
        input: { indexedSeconds: deadline + 1n, reason: owing.revocationDue as string },
        now,
      }),
    );
    expect(revoked.moved && revoked.reward).toMatchObject({ status: "revoked", revokedReason: "order_refunded" });
  });

  it("one proven funding address per partner; addresses set before proofs may repeat (issue 40, finding 1)", async () => {
    await seedOrder(store, { partnerId: "ptr_f1", orderId: "ord_f1", purchaseId: `0x${"5".repeat(64)}` });
    await seedOrder(store, { partnerId: "ptr_f2", orderId: "ord_f2", purchaseId: `0x${"6".repeat(64)}` });
    await expectOneProvenFunder(store);
  });
});

/** Two partners proving one funding address: the store's unique index lets one win, whatever the code above it checks. */
async function expectOneProvenFunder(store: Store) {
  const funding = { address: FUNDER, message: "proof", signature: "0x01" as Hex };
  await store.transaction().execute((trx) => updateRewardSettings(trx, { partnerId: "ptr_f1", funding, now: 1 }));
  await expect(
    store.transaction().execute((trx) => updateRewardSettings(trx, { partnerId: "ptr_f2", funding, now: 2 })),
  ).rejects.toThrow();
  expect(await partnerHoldingFunder(store, FUNDER)).toBe("ptr_f1");
  expect(provenFunder(await rewardSettingsOf(store, "ptr_f2"))).toBeUndefined();
  // Rows written before migration 0017 carry no proof: the index leaves them alone.
  for (const partnerId of ["ptr_f2", "ptr_f3"]) {
    await store
      .insertInto("partner")
      .values({ id: partnerId, name: partnerId, created_at: 1 })
      .onConflict((oc) => oc.doNothing())
      .execute();
    await store
      .insertInto("reward_settings")
      .values({
        partner_id: partnerId,
        funding_address: FUNDER.toLowerCase(),
        cashback_bps: 0,
        funding_proven_at: null,
        funding_proof_message: null,
        funding_proof_signature: null,
        created_at: 1,
        updated_at: 1,
      })
      .execute();
    expect(provenFunder(await rewardSettingsOf(store, partnerId))).toBeUndefined();
  }
}

describe("reward tables on Postgres (PGlite)", () => {
  it("migrate, and keep one automatic cashback per order while grants are many", { timeout: 60_000 }, async () => {
    const dataDir = newDataDir();
    const store = openStore({ storeUrl: `pglite:${dataDir}/pg`, dataDir });
    try {
      await migrateStore(store);
      await seedOrder(store, { partnerId: "ptr_p", orderId: "ord_p", purchaseId: `0x${"3".repeat(64)}` });
      const insert = (source: "grant" | "cashback") =>
        store.transaction().execute((trx) =>
          insertReward(trx, {
            partnerId: "ptr_p",
            orderId: "ord_p",
            externalOrderId: "ext-ord_p",
            source,
            idempotencyKey: null,
            chainId: 31337,
            distributor: DISTRIBUTOR,
            token: TOKEN,
            amount: 5n,
            now: 1,
          }),
        );
      expect(await insert("cashback")).toMatchObject({ source: "cashback", amount: 5n, status: "granted" });
      expect(await insert("cashback")).toBeUndefined();
      expect(await insert("grant")).toBeDefined();
      expect(await insert("grant")).toBeDefined();
      await seedOrder(store, { partnerId: "ptr_f1", orderId: "ord_f1", purchaseId: `0x${"5".repeat(64)}` });
      await seedOrder(store, { partnerId: "ptr_f2", orderId: "ord_f2", purchaseId: `0x${"6".repeat(64)}` });
      await expectOneProvenFunder(store);
    } finally {
      await store.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
