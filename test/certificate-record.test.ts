import { getAddress, type Hex, zeroAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CertificateTransitionName,
  certificateTransitions,
  createCertificate,
  findCertificate,
  type SeenMint,
  transitionCertificate,
} from "../api/certificates/certificate-record.js";
import type { CertificateStatus } from "../api/store/database.js";
import type { Store } from "../api/store/open-store.js";
import { allows } from "../api/store/transition-table.js";
import { seedOrder, unitStore } from "./support/unit-store.js";

// Fast unit tests of the certificate record: its transition table, and the guarded
// UPDATEs that apply it, on a real migrated SQLite store. No chain, no indexer.

const STATUSES: CertificateStatus[] = ["not_requested", "awaiting_wallet", "voucher_issued", "pending", "minted"];
const LEGAL: Record<CertificateTransitionName, CertificateStatus[]> = {
  issueVoucher: ["awaiting_wallet", "voucher_issued"],
  seeMint: ["voucher_issued"],
  confirmMint: ["voucher_issued", "pending"],
};
const TARGET: Record<CertificateTransitionName, CertificateStatus> = {
  issueVoucher: "voucher_issued",
  seeMint: "pending",
  confirmMint: "minted",
};

const contract = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const buyer = getAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
const txHash = `0x${"ab".repeat(32)}` as Hex;
const mint = (confirmations: number, required = 3): SeenMint => ({
  transactionHash: txHash,
  blockNumber: 42n,
  buyer,
  confirmations,
  required,
});
const inputFor = (name: CertificateTransitionName) =>
  name === "issueVoucher" ? { buyer, deadlineSeconds: 1_900_000_000n } : name === "seeMint" ? mint(1) : mint(3);

let store: Store;
let close: () => Promise<void>;
let sequence = 0;

async function newCertificate(status: CertificateStatus = "awaiting_wallet"): Promise<string> {
  sequence++;
  const orderId = `ord_${sequence}`;
  const purchaseId = `0x${sequence.toString(16).padStart(64, "0")}`;
  await seedOrder(store, { partnerId: "ptn_unit", orderId, purchaseId });
  await store
    .transaction()
    .execute((trx) => createCertificate(trx, { orderId, purchaseId, chainId: 31337, contract, now: 1_000 }));
  // Test set-up only: put the certificate straight into the state under test.
  if (status !== "awaiting_wallet")
    await store.updateTable("certificate").set({ status }).where("order_id", "=", orderId).execute();
  return orderId;
}

beforeAll(async () => {
  ({ store, close } = await unitStore());
});
afterAll(async () => close());

describe("the certificate transition table", () => {
  it("lists exactly the legal moves", () => {
    expect(Object.keys(certificateTransitions).sort()).toEqual(Object.keys(LEGAL).sort());
    for (const name of Object.keys(LEGAL) as CertificateTransitionName[]) {
      expect(certificateTransitions[name].to).toBe(TARGET[name]);
      for (const status of STATUSES)
        expect(allows(certificateTransitions, name, status), `${name} from ${status}`).toBe(LEGAL[name].includes(status));
    }
  });

  it("guards on confirmations: a shallow mint is seen, never confirmed; a final one is confirmed, never merely seen", () => {
    expect(certificateTransitions.seeMint.refuse(mint(2))).toBeUndefined();
    expect(certificateTransitions.seeMint.refuse(mint(3))).toMatch(/final/);
    expect(certificateTransitions.confirmMint.refuse(mint(2))).toBe("the mint has 2 of 3 confirmations");
    expect(certificateTransitions.confirmMint.refuse(mint(3))).toBeUndefined();
  });
});

describe("the certificate record on SQLite", () => {
  it("applies every legal move and refuses every illegal one without changing the row", async () => {
    for (const name of Object.keys(LEGAL) as CertificateTransitionName[]) {
      for (const status of STATUSES) {
        const orderId = await newCertificate(status);
        const outcome = await store
          .transaction()
          .execute((trx) =>
            transitionCertificate(trx, { orderId, transition: name, input: inputFor(name) as never, now: 5_000 }),
          );
        const after = await findCertificate(store, orderId);
        if (LEGAL[name].includes(status)) {
          expect(outcome.moved, `${name} from ${status}`).toBe(true);
          expect(after?.status).toBe(TARGET[name]);
          expect(after?.updatedAt).toBe(5_000);
        } else {
          expect(outcome, `${name} from ${status}`).toEqual({ moved: false, reason: `the certificate is ${status}` });
          expect(after?.status).toBe(status);
          expect(after?.updatedAt).toBe(1_000);
        }
      }
    }
  });

  it("walks awaiting_wallet → voucher_issued → pending → minted with domain types on the way", async () => {
    const orderId = await newCertificate();
    const created = await findCertificate(store, orderId);
    expect(created).toMatchObject({
      status: "awaiting_wallet",
      contract,
      buyer: null,
      tokenId: BigInt(sequence),
      chainId: 31337,
    });

    const issued = await store.transaction().execute((trx) =>
      transitionCertificate(trx, {
        orderId,
        transition: "issueVoucher",
        input: { buyer, deadlineSeconds: 1_900_000_000n },
        now: 2_000,
      }),
    );
    expect(issued.moved && issued.certificate).toMatchObject({
      status: "voucher_issued",
      buyer,
      voucherDeadlineSeconds: 1_900_000_000n,
    });
    // The buyer is stored lower case (as the index reports mints) and read back checksummed.
    const raw = await store.selectFrom("certificate").select("buyer").where("order_id", "=", orderId).executeTakeFirstOrThrow();
    expect(raw.buyer).toBe(buyer.toLowerCase());

    const seen = await store
      .transaction()
      .execute((trx) => transitionCertificate(trx, { orderId, transition: "seeMint", input: mint(1), now: 3_000 }));
    expect(seen.moved && seen.certificate).toMatchObject({
      status: "pending",
      mintTransactionHash: txHash,
      mintBlockNumber: 42n,
    });

    const early = await store
      .transaction()
      .execute((trx) => transitionCertificate(trx, { orderId, transition: "confirmMint", input: mint(2), now: 3_500 }));
    expect(early).toEqual({ moved: false, reason: "the mint has 2 of 3 confirmations" });
    expect((await findCertificate(store, orderId))?.status).toBe("pending");

    const minted = await store
      .transaction()
      .execute((trx) => transitionCertificate(trx, { orderId, transition: "confirmMint", input: mint(3), now: 4_000 }));
    expect(minted.moved && minted.certificate).toMatchObject({ status: "minted", mintedAt: 4_000, buyer });

    // A minted certificate is final: no new voucher, no second mint.
    const again = await store.transaction().execute((trx) =>
      transitionCertificate(trx, {
        orderId,
        transition: "issueVoucher",
        input: { buyer: zeroAddress, deadlineSeconds: 1n },
        now: 6_000,
      }),
    );
    expect(again).toEqual({ moved: false, reason: "the certificate is minted" });
    expect(await findCertificate(store, orderId)).toMatchObject({ status: "minted", buyer, updatedAt: 4_000 });
  });

  it("creates a certificate once per order: a replayed settlement changes nothing", async () => {
    const orderId = await newCertificate();
    await store
      .transaction()
      .execute((trx) =>
        transitionCertificate(trx, { orderId, transition: "issueVoucher", input: { buyer, deadlineSeconds: 10n }, now: 2_000 }),
      );
    const purchaseId = (await findCertificate(store, orderId))?.purchaseId as Hex;
    await store
      .transaction()
      .execute((trx) => createCertificate(trx, { orderId, purchaseId, chainId: 1, contract: zeroAddress, now: 9_000 }));
    expect(await findCertificate(store, orderId)).toMatchObject({ status: "voucher_issued", chainId: 31337, contract });
  });

  it("refuses to write outside the caller's transaction", async () => {
    const orderId = await newCertificate();
    await expect(
      transitionCertificate(store, { orderId, transition: "issueVoucher", input: { buyer, deadlineSeconds: 1n }, now: 2_000 }),
    ).rejects.toThrow(/inside the caller's transaction/);
    expect((await findCertificate(store, orderId))?.status).toBe("awaiting_wallet");
  });
});
