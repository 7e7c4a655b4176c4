import { join } from "node:path";
import { type Address, type Hex, isAddressEqual, keccak256, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { certificateNftAbi } from "../contracts/generated/index.js";
import {
  accountWallet,
  adminWallet,
  api,
  expectJson,
  offeringDraft,
  openOffering,
  portalWallet,
  registerIssuer,
  signIn,
} from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Investors are funded Anvil accounts (1..6): they pay real test USDC from their own wallets.
let stack: TestStack;
let store: Store;
let adminToken: string;
let issuerToken: string;
/** The partner behind the issuer: it hears the offering's events. */
let issuerPartnerId: string;
let otherIssuerToken: string;
let offeringId: string;
let otherOfferingId: string;
const investorTokens: Record<number, string> = {};

type Purchase = {
  id: string;
  status: string;
  expiresAt: string;
  payment: { tokenAddress: Address; recipient: Address; amount: string; chainId: number; totalPriceUsdc: string };
  settlement: { transactionHash: string } | null;
  onchainPurchaseId: string;
  certificate: { status: string; tokenId: string; frozen: boolean } | null;
};

beforeAll(async () => {
  stack = await startTestStack({ env: { VERIFY_RATE_LIMIT: "40" } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  adminToken = await signIn(stack, "admin", adminWallet(stack));
  const harbour = await registerIssuer(stack, adminToken, portalWallet(), "Harbour Capital");
  issuerToken = harbour.token;
  issuerPartnerId = harbour.issuer.partnerId;
  otherIssuerToken = (await registerIssuer(stack, adminToken, portalWallet(), "Rival Estates")).token;
  offeringId = await openOffering(
    stack,
    { issuer: issuerToken, admin: adminToken },
    { unitPriceUsdc: "2000000", totalUnits: 50 },
  );
  otherOfferingId = await openOffering(
    stack,
    { issuer: otherIssuerToken, admin: adminToken },
    { name: "Rival Tower", unitPriceUsdc: "2000000", settlementAddress: stack.deployment.paymentAddresses[2] },
  );
  for (const index of [1, 2, 3, 4, 5, 6]) investorTokens[index] = await signIn(stack, "investor", accountWallet(stack, index));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

async function checkout(investor: number, body: Record<string, unknown>): Promise<Purchase> {
  return expectJson<Purchase>(
    await api(stack, "POST", "/api/rwa/checkout", { token: investorTokens[investor], json: body }),
    201,
  );
}

function pay(
  from: number,
  purchase: Pick<Purchase, "payment">,
  amount = BigInt(purchase.payment.amount),
  to = purchase.payment.recipient,
) {
  return stack.payUsdc({ from, to, amount });
}

function submit(investor: number, purchaseId: string, transactionHash: Hex) {
  return api(stack, "POST", "/api/rwa/settlements/wallet", {
    token: investorTokens[investor],
    json: { purchaseId, transactionHash },
  });
}

async function readPurchase(investor: number, id: string): Promise<Purchase> {
  return expectJson<Purchase>(await api(stack, "GET", `/api/rwa/checkout/${id}`, { token: investorTokens[investor] }), 200);
}

const settled = (investor: number, id: string) =>
  waitFor(
    async () => {
      const purchase = await readPurchase(investor, id);
      return purchase.status === "settled" ? purchase : undefined;
    },
    { what: `purchase ${id} settled` },
  );

/** Waits until the settlement worker has looked at a transfer, so a rejection is not a "not indexed yet". */
const recorded = (hash: Hex) =>
  waitFor(
    async () =>
      (await store.selectFrom("payment").select("status").where("transaction_hash", "=", hash).executeTakeFirst()) ?? undefined,
  );

async function expectRejected(response: Response, status: number, codes: string[]) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(codes).toContain(JSON.parse(text).code);
}

describe("an investor's purchase, end to end", () => {
  let purchase: Purchase;
  let paymentHash: Hex;
  let mintHash: Hex;

  it("reserves units and answers with the exact payment to make", async () => {
    purchase = await checkout(1, { offeringId, units: 3 });
    expect(purchase.status).toBe("awaiting_payment");
    expect(purchase.payment.chainId).toBe(31337);
    expect(isAddressEqual(purchase.payment.tokenAddress, stack.local.contracts.usdc as Address)).toBe(true);
    expect(isAddressEqual(purchase.payment.recipient, stack.deployment.paymentAddresses[1] as Address)).toBe(true);
    expect(purchase.payment.totalPriceUsdc).toBe("6000000");
    const offset = BigInt(purchase.payment.amount) - 6_000_000n;
    expect(offset).toBeGreaterThanOrEqual(1n);
    expect(offset).toBeLessThan(10_000n);
    const offering = await expectJson(await api(stack, "GET", `/api/rwa/offerings/${offeringId}`), 200);
    expect(offering.unitsAvailable).toBe(47);
  });

  it("settles from the investor's own wallet and lists the purchase as the investor's", async () => {
    const paid = await pay(1, purchase);
    paymentHash = paid.hash;
    const response = await submit(1, purchase.id, paid.hash);
    const result = await expectJson(response, 200);
    expect(["settled", "payment_pending"]).toContain(result.status);
    const done = await settled(1, purchase.id);
    expect(done.settlement?.transactionHash).toBe(paid.hash);
    const list = await expectJson(await api(stack, "GET", "/api/rwa/checkout", { token: investorTokens[1] }), 200);
    expect(list.data.map((row: Purchase) => row.id)).toContain(purchase.id);
    // Submitting the same hash again is harmless.
    expect((await expectJson(await submit(1, purchase.id, paid.hash), 200)).status).toBe("settled");
    // The issuer's partner hears it with the session's metadata, every value a string as the contract says.
    const key = await expectJson(
      await api(stack, "POST", `/api/admin/partners/${issuerPartnerId}/api-keys`, { token: adminToken }),
      201,
    );
    const events = await expectJson(
      await api(stack, "GET", "/v1/events?type=purchase.settled&limit=500", {
        headers: { Authorization: `Bearer ${key.apiKey}` },
      }),
      200,
    );
    const settledEvent = events.data.find(
      (item: { data: { metadata: { purchaseId?: string } } }) => item.data.metadata.purchaseId === purchase.id,
    );
    expect(settledEvent?.data.metadata).toEqual({ offeringId, purchaseId: purchase.id, units: "3", unitPriceUsdc: "2000000" });
  });

  it("issues the certificate voucher and the indexer sees the mint", async () => {
    const claim = await expectJson(
      await api(stack, "POST", `/api/rwa/certificates/${purchase.id}/claim`, { token: investorTokens[1] }),
      200,
    );
    expect(claim).toMatchObject({ contract: { chainId: 31337 }, transaction: { chainId: 31337 } });
    expect(isAddressEqual(claim.voucher.buyer, stack.local.accounts[1]!.address as Address)).toBe(true);
    mintHash = await stack.wallet(1).sendTransaction({
      to: claim.transaction.to,
      data: claim.transaction.data,
      chain: stack.chain,
      account: stack.wallet(1).account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash: mintHash });
    const certificates = await waitFor(
      async () => {
        const list = await expectJson(await api(stack, "GET", "/api/rwa/certificates", { token: investorTokens[1] }), 200);
        return list.data[0]?.certificate.status === "minted" ? list : undefined;
      },
      { what: "certificate minted" },
    );
    expect(certificates.data).toHaveLength(1);
    expect(certificates.data[0]).toMatchObject({ purchaseId: purchase.id, units: 3, certificate: { frozen: false } });
  });

  it("verifies the certificate publicly by token id, by mint and payment transaction, and by wallet", async () => {
    const tokenId = BigInt(purchase.onchainPurchaseId).toString();
    const byToken = await expectJson(await api(stack, "GET", `/api/rwa/verify/certificates/${tokenId}`), 200);
    expect(byToken).toMatchObject({
      status: "valid",
      chainId: 31337,
      tokenId,
      purchaseId: purchase.onchainPurchaseId,
      offering: { id: offeringId, name: "Harbour Logistics Note 2031", issuer: "Harbour Capital" },
      mint: { transactionHash: mintHash },
    });
    expect(isAddressEqual(byToken.owner, stack.local.accounts[1]!.address as Address)).toBe(true);
    expect(isAddressEqual(byToken.contract, stack.local.contracts.certificate as Address)).toBe(true);
    expect(byToken.mint.confirmations).toBeGreaterThanOrEqual(1);
    // No personal data: no KYC, jurisdiction, amounts or investor records.
    expect(Object.keys(byToken).sort()).toEqual([
      "chainId",
      "contract",
      "mint",
      "offering",
      "owner",
      "purchaseId",
      "status",
      "tokenId",
    ]);

    const hex = `0x${BigInt(tokenId).toString(16)}`;
    expect(await expectJson(await api(stack, "GET", `/api/rwa/verify/certificates/${hex}`), 200)).toEqual(byToken);
    expect(await expectJson(await api(stack, "GET", `/api/rwa/verify/transactions/${mintHash}`), 200)).toEqual(byToken);
    expect(await expectJson(await api(stack, "GET", `/api/rwa/verify/transactions/${paymentHash}`), 200)).toEqual(byToken);
    const wallet = await expectJson(await api(stack, "GET", `/api/rwa/verify/wallets/${stack.local.accounts[1]!.address}`), 200);
    expect(wallet.data).toEqual([byToken]);
    const unknown = await api(stack, "GET", "/api/rwa/verify/certificates/12345");
    await expectRejected(unknown, 404, ["certificate_not_found"]);
  });

  it("shows the purchase in the issuer's purchases and holder register, as JSON and CSV", async () => {
    const purchases = await expectJson(
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/purchases`, { token: issuerToken }),
      200,
    );
    expect(purchases.data.map((row: Purchase) => row.id)).toContain(purchase.id);
    const holders = await expectJson(
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders`, { token: issuerToken }),
      200,
    );
    expect(holders.data).toEqual([
      expect.objectContaining({ units: 3, totalPaidUsdc: "6000000", purchases: 1, kycStatus: "pending", frozen: false }),
    ]);
    expect(isAddressEqual(holders.data[0].investor, stack.local.accounts[1]!.address as Address)).toBe(true);
    const csv = await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders.csv`, { token: issuerToken });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toBe("investor,units,totalPaidUsdc,purchases,kycStatus,jurisdiction,frozen");
    expect(lines[1]).toBe(`${holders.data[0].investor},3,6000000,1,pending,,false`);
    const purchasesCsv = await (
      await api(stack, "GET", `/api/issuer/offerings/${offeringId}/purchases.csv`, { token: issuerToken })
    ).text();
    expect(purchasesCsv).toContain(`${purchase.id},settled,`);
    expect(purchasesCsv).toContain(paymentHash);
    // Another issuer sees none of it.
    const foreign = await api(stack, "GET", `/api/issuer/offerings/${offeringId}/holders.csv`, { token: otherIssuerToken });
    await expectRejected(foreign, 404, ["not_found"]);
  });

  it("shows certificates of a frozen wallet as frozen and refuses new purchases and claims", async () => {
    const address = stack.local.accounts[1]!.address;
    await expectJson(
      await api(stack, "POST", `/api/admin/investors/${address}/freeze`, {
        token: adminToken,
        json: { reason: "sanctions screening hit" },
      }),
      200,
    );
    const list = await expectJson(await api(stack, "GET", "/api/rwa/certificates", { token: investorTokens[1] }), 200);
    expect(list.data[0].certificate).toMatchObject({ status: "minted", frozen: true });
    await expectRejected(
      await api(stack, "POST", "/api/rwa/checkout", { token: investorTokens[1], json: { offeringId, units: 1 } }),
      403,
      ["wallet_frozen"],
    );
    await expectRejected(
      await api(stack, "POST", `/api/rwa/certificates/${purchase.id}/claim`, { token: investorTokens[1] }),
      403,
      ["wallet_frozen"],
    );
    await expectJson(await api(stack, "POST", `/api/admin/investors/${address}/unfreeze`, { token: adminToken }), 200);
  });

  it("reports a certificate the contract owner revoked as revoked", async () => {
    const tokenId = BigInt(purchase.onchainPurchaseId);
    const hash = await stack.wallet(0).writeContract({
      address: stack.local.contracts.certificate as Address,
      abi: certificateNftAbi,
      functionName: "revoke",
      args: [tokenId, "issuer request"],
      chain: stack.chain,
      account: stack.wallet(0).account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash });
    const verdict = await waitFor(
      async () => {
        const answer = await expectJson(await api(stack, "GET", `/api/rwa/verify/certificates/${tokenId}`), 200);
        return answer.status === "revoked" ? answer : undefined;
      },
      { what: "revocation indexed" },
    );
    expect(verdict.purchaseId).toBe(purchase.onchainPurchaseId);
  });
});

describe("binding a payment to the investor's purchase", () => {
  it("refuses a payment sent from a wallet other than the investor's", async () => {
    const purchase = await checkout(2, { offeringId, units: 1 });
    const paid = await pay(3, purchase);
    await recorded(paid.hash);
    await expectRejected(await submit(2, purchase.id, paid.hash), 422, ["wrong_payer"]);
    expect((await readPurchase(2, purchase.id)).status).toBe("awaiting_payment");
  });

  it("refuses a transaction hash already credited to another purchase", async () => {
    const victim = await checkout(2, { offeringId, units: 2 });
    const paid = await pay(2, victim);
    await settled(2, victim.id);
    const attacker = await checkout(3, { offeringId, units: 2 });
    await expectRejected(await submit(3, attacker.id, paid.hash), 422, ["replay", "wrong_amount", "wrong_payer"]);
    expect((await readPurchase(3, attacker.id)).status).toBe("awaiting_payment");
    // The victim's own purchase stays settled with its own hash.
    expect((await readPurchase(2, victim.id)).settlement?.transactionHash).toBe(paid.hash);
  });

  it("hides another investor's purchase: read, settle and claim answer not found", async () => {
    const mine = await checkout(4, { offeringId, units: 1 });
    const paid = await pay(4, mine);
    await expectRejected(await api(stack, "GET", `/api/rwa/checkout/${mine.id}`, { token: investorTokens[5] }), 404, [
      "not_found",
    ]);
    await expectRejected(await submit(5, mine.id, paid.hash), 404, ["not_found"]);
    await expectRejected(await api(stack, "POST", `/api/rwa/certificates/${mine.id}/claim`, { token: investorTokens[5] }), 404, [
      "not_found",
    ]);
    const list = await expectJson(await api(stack, "GET", "/api/rwa/checkout", { token: investorTokens[5] }), 200);
    expect(list.data.map((row: Purchase) => row.id)).not.toContain(mine.id);
    await settled(4, mine.id);
  });

  it("refuses the payment of a different offering's purchase, and wrong amounts or recipients", async () => {
    const here = await checkout(5, { offeringId, units: 1 });
    const there = await checkout(5, { offeringId: otherOfferingId, units: 1 });
    const paidThere = await pay(5, there);
    await recorded(paidThere.hash);
    await expectRejected(await submit(5, here.id, paidThere.hash), 422, ["wrong_recipient"]);

    const short = await pay(5, here, BigInt(here.payment.amount) - 1n);
    await recorded(short.hash);
    await expectRejected(await submit(5, here.id, short.hash), 422, ["wrong_amount"]);

    const elsewhere = await pay(5, here, BigInt(here.payment.amount), stack.deployment.paymentAddresses[3] as Address);
    await recorded(elsewhere.hash);
    await expectRejected(await submit(5, here.id, elsewhere.hash), 422, ["wrong_recipient"]);
    expect((await readPurchase(5, here.id)).status).toBe("awaiting_payment");
    expect((await expectJson(await submit(5, there.id, paidThere.hash), 200)).status).toBe("settled");
  });

  it("refuses a network that is not enabled, and a hash that exists on no network we serve", async () => {
    const draft = await api(stack, "POST", "/api/issuer/offerings", {
      token: issuerToken,
      json: offeringDraft(stack, { network: "base" }),
    });
    await expectRejected(draft, 422, ["unsupported_network"]);
    const purchase = await checkout(6, { offeringId, units: 1 });
    const nowhere = keccak256(toHex(`no such transaction ${Date.now()}`));
    await expectRejected(await submit(6, purchase.id, nowhere), 404, ["payment_not_found"]);
  });
});

describe("sold out", () => {
  it("closes an offering when every unit is paid for", async () => {
    const small = await openOffering(stack, { issuer: issuerToken, admin: adminToken }, { name: "Two-unit note", totalUnits: 2 });
    const purchase = await checkout(6, { offeringId: small, units: 2 });
    await expectRejected(
      await api(stack, "POST", "/api/rwa/checkout", { token: investorTokens[5], json: { offeringId: small, units: 1 } }),
      409,
      ["insufficient_units"],
    );
    const paid = await pay(6, purchase);
    await expectJson(await submit(6, purchase.id, paid.hash), 200);
    await settled(6, purchase.id);
    const offering = await waitFor(
      async () => {
        const answer = await expectJson(await api(stack, "GET", `/api/rwa/offerings/${small}`), 200);
        return answer.status === "closed" ? answer : undefined;
      },
      { what: "offering closed" },
    );
    expect(offering).toMatchObject({ closeReason: "sold_out", unitsAvailable: 0 });
  });
});

describe("public verification is rate limited", () => {
  it("answers 429 problem+json once a client exceeds the limit", async () => {
    let limited: Response | undefined;
    for (let i = 0; i < 60 && limited === undefined; i++) {
      const response = await api(stack, "GET", "/api/rwa/verify/certificates/1");
      if (response.status === 429) limited = response;
      else await response.text();
    }
    expect(limited).toBeDefined();
    expect(limited!.headers.get("content-type")).toContain("application/problem+json");
    expect(await limited!.json()).toMatchObject({ status: 429, code: "rate_limited" });
  });
});
