import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Address, BaseError, ContractFunctionRevertedError, erc20Abi, getAddress, type Hex, keccak256, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartner, issueApiKey } from "../api/partners/api-keys.js";
import { rewardIdOnChain, signRewardVoucher } from "../api/rewards/reward-voucher.js";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createClient, SettlementApiError } from "../client/src/index.js";
import { verifySignature } from "../client/src/signature.js";
import { rewardDistributorAbi } from "../contracts/generated/index.js";
import { voucherKeyFile } from "../local/local-secrets.js";
import {
  type CreatedSession,
  createSession,
  outboxEvents,
  publicPost,
  readOrder,
  submitHash,
} from "./support/checkout-helpers.js";
import { adminWallet, signIn } from "./support/portal-client.js";
import { putProvenFundingAddress } from "./support/reward-funding.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.js";

const FUNDER = 5;
const PAYER = 1;
const RECIPIENT = 7;
const THIRD_PARTY = 8;

let stack: TestStack;
let store: Store;
let receiver: WebhookReceiver;
let endpointSecret: string;
let otherPartnerKey: string;

const accountAddress = (index: number) => getAddress(stack.local.accounts[index]!.address);
const signAs = (index: number) => (message: string) =>
  privateKeyToAccount(stack.local.accounts[index]!.privateKey as Hex).signMessage({ message });
const distributor = () => getAddress(stack.local.contracts.rewardDistributor);
// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely and assert their shape
type Json = Record<string, any>;

async function call(path: string, init: RequestInit & { json?: unknown } = {}): Promise<{ status: number; body: Json }> {
  const response = await stack.partnerFetch(path, init);
  return { status: response.status, body: (await response.json()) as Json };
}

async function publicCall(path: string, body: unknown): Promise<{ status: number; body: Json }> {
  const response = await publicPost(stack, path, body);
  return { status: response.status, body: (await response.json()) as Json };
}

/** A settled order of the demo partner, paid by account PAYER. */
async function settledSession(totalPriceUsdc = "20000000"): Promise<CreatedSession> {
  const session = await createSession(stack, { totalPriceUsdc, certificate: { enabled: false } });
  const paid = await stack.payUsdc({ from: PAYER, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
  await waitFor(async () => {
    const body = (await (await submitHash(stack, session.clientToken, paid.hash)).json()) as Json;
    return body.status === "settled" ? body : undefined;
  });
  return session;
}

async function approveDistributor(amount: bigint) {
  const wallet = stack.wallet(FUNDER);
  const hash = await wallet.writeContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "approve",
    args: [distributor(), amount],
    chain: stack.chain,
    account: wallet.account!,
  });
  await stack.publicClient.waitForTransactionReceipt({ hash });
}

const balanceOf = (address: Address) =>
  stack.publicClient.readContract({
    address: stack.local.contracts.usdc as Address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });

async function grant(orderId: string, amount: string, idempotencyKey = `grant-${orderId}-${amount}`) {
  return call(`/v1/orders/${orderId}/rewards`, { method: "POST", json: { amount, idempotencyKey } });
}

async function rewardOf(id: string): Promise<Json> {
  return (await call(`/v1/rewards/${id}`)).body;
}

async function waitForStatus(id: string, status: string, timeoutMs = 20_000): Promise<Json> {
  return waitFor(
    async () => {
      const reward = await rewardOf(id);
      return reward.status === status ? reward : undefined;
    },
    { timeoutMs, what: `reward ${id} ${status}` },
  );
}

async function revertErrorName(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError) return reverted.data?.errorName ?? reverted.reason;
    throw error;
  }
  throw new Error("expected a revert");
}

beforeAll(async () => {
  stack = await startTestStack();
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
  receiver = await startWebhookReceiver();
  const endpoint = await call("/v1/webhook-endpoints", {
    method: "POST",
    json: { url: receiver.url("/rewards"), events: ["reward.claimed"] },
  });
  expect(endpoint.status).toBe(201);
  endpointSecret = endpoint.body.secret;
  const other = await createPartner(store, { name: "Other shop" });
  otherPartnerKey = (await issueApiKey(store, { partnerId: other.id, mode: "test" })).apiKey;
}, 420_000);

afterAll(async () => {
  await receiver?.close();
  await store?.destroy();
  await stack?.stop();
});

describe("reward settings", () => {
  it("starts empty, takes a partial update, refuses the zero address and the token", async () => {
    const initial = await call("/v1/rewards/settings");
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({
      fundingAddress: null,
      cashbackBps: 0,
      distributor: { address: distributor(), chainId: 31337 },
      allowance: null,
      outstanding: "0",
      warnings: [],
    });
    for (const fundingAddress of ["0x0000000000000000000000000000000000000000", stack.local.contracts.usdc]) {
      const refused = await call("/v1/rewards/settings", { method: "PUT", json: { fundingAddress } });
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe("invalid_funding_address");
    }
    const set = await putProvenFundingAddress(stack, { address: accountAddress(FUNDER), sign: signAs(FUNDER) });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({
      fundingAddress: accountAddress(FUNDER),
      fundingProven: true,
      cashbackBps: 0,
      allowance: "0",
    });
    const again = await call("/v1/rewards/settings", { method: "PUT", json: { fundingAddress: accountAddress(FUNDER) } });
    expect(again.status).toBe(200);
    const partial = await call("/v1/rewards/settings", { method: "PUT", json: { cashbackBps: 0 } });
    expect(partial.body.fundingAddress).toBe(accountAddress(FUNDER));
    const bad = await call("/v1/rewards/settings", { method: "PUT", json: { cashbackBps: 10_001 } });
    expect(bad.status).toBe(400);
  });
});

describe("a funding address is the partner's only with its own signature (issue 40, finding 1)", () => {
  const asOther = (path: string, json: unknown) =>
    stack
      .partnerFetch(path, {
        method: path.endsWith("challenge") ? "POST" : "PUT",
        headers: { Authorization: `Bearer ${otherPartnerKey}` },
        json,
      })
      .then(async (response) => ({ status: response.status, body: (await response.json()) as Json }));

  it("another partner cannot name the demo partner's funding wallet, nor replay or forge its proof", async () => {
    // The attack: partner B names A's approved wallet and would have its rewards paid from it.
    const bare = await asOther("/v1/rewards/settings", { fundingAddress: accountAddress(FUNDER) });
    expect(bare.status).toBe(400);
    expect(bare.body).toMatchObject({ code: "invalid_funding_proof", reason: "missing" });

    // A proof A asked for (of a wallet no partner holds), replayed by B: the challenge was issued to A.
    const forA = await call("/v1/rewards/settings/funding-challenge", {
      method: "POST",
      json: { fundingAddress: accountAddress(RECIPIENT) },
    });
    expect(forA.body.message).toContain(stack.local.partner.id);
    const replayed = await asOther("/v1/rewards/settings", {
      fundingAddress: accountAddress(RECIPIENT),
      fundingProof: { message: forA.body.message, signature: await signAs(RECIPIENT)(forA.body.message) },
    });
    expect(replayed.body).toMatchObject({ code: "invalid_funding_proof", reason: "unknown_challenge" });

    // B's own challenge for that wallet, signed by another wallet: not the funding address's signature.
    const forB = await asOther("/v1/rewards/settings/funding-challenge", { fundingAddress: accountAddress(RECIPIENT) });
    expect(forB.status).toBe(200);
    const forged = await asOther("/v1/rewards/settings", {
      fundingAddress: accountAddress(RECIPIENT),
      fundingProof: { message: forB.body.message, signature: await signAs(THIRD_PARTY)(forB.body.message) },
    });
    expect(forged.body).toMatchObject({ code: "invalid_funding_proof", reason: "invalid_signature" });

    // Even the wallet itself cannot make one funding address pay two partners.
    const taken = await putProvenFundingAddress(stack, {
      address: accountAddress(FUNDER),
      sign: signAs(FUNDER),
      apiKey: otherPartnerKey,
    });
    expect(taken.status).toBe(409);
    expect(((await taken.json()) as Json).code).toBe("funding_address_taken");
    // A proof is single-use.
    const once = await call("/v1/rewards/settings/funding-challenge", {
      method: "POST",
      json: { fundingAddress: accountAddress(FUNDER) },
    });
    const proof = { message: once.body.message, signature: await signAs(FUNDER)(once.body.message) };
    expect(
      (
        await call("/v1/rewards/settings", {
          method: "PUT",
          json: { fundingAddress: accountAddress(FUNDER), fundingProof: proof },
        })
      ).status,
    ).toBe(200);
    const reused = await call("/v1/rewards/settings", {
      method: "PUT",
      json: { fundingAddress: accountAddress(FUNDER), fundingProof: proof },
    });
    expect(reused.body).toMatchObject({ code: "invalid_funding_proof", reason: "challenge_used" });
    expect((await call("/v1/rewards/settings")).body).toMatchObject({
      fundingAddress: accountAddress(FUNDER),
      fundingProven: true,
    });
  });

  it("a funding address set before proofs existed pays nothing until proven", async () => {
    const session = await settledSession("2000000");
    const granted = await grant(session.orderId, "150000", "legacy-1");
    expect(granted.status).toBe(201);
    // As migration 0017 leaves a row written before it: the address, no proof.
    await store
      .updateTable("reward_settings")
      .set({ funding_proven_at: null })
      .where("partner_id", "=", stack.local.partner.id)
      .execute();
    expect((await call("/v1/rewards/settings")).body).toMatchObject({
      fundingAddress: accountAddress(FUNDER),
      fundingProven: false,
    });
    const claim = await publicCall(`/v1/public/rewards/${granted.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(claim.status).toBe(409);
    expect(claim.body.code).toBe("rewards_not_configured");
    expect((await grant(session.orderId, "1000", "legacy-2")).body.code).toBe("rewards_not_configured");
    expect((await putProvenFundingAddress(stack, { address: accountAddress(FUNDER), sign: signAs(FUNDER) })).status).toBe(200);
    expect((await call(`/v1/rewards/${granted.body.id}/revoke`, { method: "POST", json: {} })).status).toBe(200);
  });
});

describe("grant → claim by a third party → indexed → reward.claimed", () => {
  let session: CreatedSession;
  let rewardId: string;
  let claim: Json;

  it("grants on a settled order only, idempotently, within the amount paid", async () => {
    const unpaid = await createSession(stack, { certificate: { enabled: false } });
    expect((await grant(unpaid.orderId, "1000")).body.code).toBe("reward_order_not_settled");

    session = await settledSession("20000000");
    const first = await grant(session.orderId, "1500000", "grant-1");
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      status: "granted",
      orderId: session.orderId,
      externalOrderId: session.externalOrderId,
      amount: "1500000",
      recipient: null,
      transactionHash: null,
      source: "grant",
    });
    rewardId = first.body.id;
    expect(rewardId).toMatch(/^rw_[0-9a-f]{24}$/);
    expect(Date.parse(first.body.expiresAt) - Date.now()).toBeGreaterThan(89 * 24 * 3_600_000);

    const replay = await grant(session.orderId, "1500000", "grant-1");
    expect(replay.status).toBe(201);
    expect(replay.body.id).toBe(rewardId);
    const conflict = await grant(session.orderId, "1500001", "grant-1");
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe("idempotency_conflict");

    const amountPaid = BigInt(session.payment.amount);
    const tooMuch = await grant(session.orderId, (amountPaid - 1_500_000n + 1n).toString(), "grant-2");
    expect(tooMuch.status).toBe(409);
    expect(tooMuch.body).toMatchObject({ code: "reward_exceeds_amount_paid", amountPaid: amountPaid.toString() });
    for (const amount of ["0", "-5", "1.5", "abc"]) {
      expect((await grant(session.orderId, amount, `bad-${amount}`)).status).toBe(400);
    }

    const listed = await call(`/v1/rewards?orderId=${session.orderId}`);
    expect(listed.body.data.map((reward: Json) => reward.id)).toEqual([rewardId]);
    expect((await readOrder(stack, session.orderId)).rewardIds).toEqual([rewardId]);
  });

  it("refuses another partner, another session's client token, and a voucher the funder cannot cover", async () => {
    const asOther = await stack.partnerFetch(`/v1/rewards/${rewardId}`, {
      headers: { Authorization: `Bearer ${otherPartnerKey}` },
    });
    expect(asOther.status).toBe(404);
    const revokeAsOther = await stack.partnerFetch(`/v1/rewards/${rewardId}/revoke`, {
      method: "POST",
      headers: { Authorization: `Bearer ${otherPartnerKey}` },
      json: {},
    });
    expect(revokeAsOther.status).toBe(404);
    const grantAsOther = await stack.partnerFetch(`/v1/orders/${session.orderId}/rewards`, {
      method: "POST",
      headers: { Authorization: `Bearer ${otherPartnerKey}` },
      json: { amount: "1", idempotencyKey: "x" },
    });
    expect(grantAsOther.status).toBe(404);

    const stranger = await createSession(stack, { certificate: { enabled: false } });
    const wrongToken = await publicCall(`/v1/public/rewards/${rewardId}/claim`, {
      clientToken: stranger.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(wrongToken.status).toBe(404);
    expect(wrongToken.body.code).toBe("not_found");
    const forged = await publicCall(`/v1/public/rewards/${rewardId}/claim`, {
      clientToken: "ct_forged",
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(forged.status).toBe(401);

    // No allowance yet: no voucher, and the reward stays granted.
    const unfunded = await publicCall(`/v1/public/rewards/${rewardId}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(unfunded.status).toBe(409);
    expect(unfunded.body.code).toBe("reward_unfunded");
    expect((await rewardOf(rewardId)).status).toBe("granted");
    const settings = await call("/v1/rewards/settings");
    expect(settings.body).toMatchObject({
      outstanding: "1500000",
      warnings: expect.arrayContaining(["allowance_below_outstanding"]),
    });
  });

  it("issues a voucher once funded, which a third party submits for the recipient", async () => {
    await approveDistributor(1_000_000_000n);
    // The settings write forgets the cached read (the console does this after its approve).
    await call("/v1/rewards/settings", { method: "PUT", json: {} });
    const settings = await call("/v1/rewards/settings");
    expect(settings.body.allowance).toBe("1000000000");
    expect(settings.body.warnings).toEqual([]);

    const answer = await publicCall(`/v1/public/rewards/${rewardId}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT).toLowerCase(),
    });
    expect(answer.status).toBe(200);
    claim = answer.body;
    expect(claim).toMatchObject({
      voucher: {
        rewardId: keccak256(toHex(rewardId)),
        funder: accountAddress(FUNDER),
        recipient: accountAddress(RECIPIENT),
        token: getAddress(stack.local.contracts.usdc),
        amount: "1500000",
      },
      contract: { address: distributor(), chainId: 31337 },
      transaction: { to: distributor(), chainId: 31337 },
    });
    expect((await rewardOf(rewardId)).status).toBe("voucher_issued");

    // While the voucher is out: no second voucher (another wallet), no revocation.
    const second = await publicCall(`/v1/public/rewards/${rewardId}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(THIRD_PARTY),
    });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: "reward_not_claimable", reason: "voucher_out" });
    const revoke = await call(`/v1/rewards/${rewardId}/revoke`, { method: "POST", json: {} });
    expect(revoke.status).toBe(409);
    expect(revoke.body).toMatchObject({ code: "reward_not_revocable", reason: "voucher_out" });

    const recipientBefore = await balanceOf(accountAddress(RECIPIENT));
    const thirdParty = stack.wallet(THIRD_PARTY);
    const hash = await thirdParty.sendTransaction({
      to: claim.transaction.to,
      data: claim.transaction.data,
      chain: stack.chain,
      account: thirdParty.account!,
    });
    const receipt = await stack.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    expect(await balanceOf(accountAddress(RECIPIENT))).toBe(recipientBefore + 1_500_000n);

    const claimed = await waitForStatus(rewardId, "claimed");
    expect(claimed).toMatchObject({ recipient: accountAddress(RECIPIENT), transactionHash: hash });

    const delivered = await waitFor(async () => receiver.acknowledged.find((request) => request.type === "reward.claimed"), {
      timeoutMs: 45_000,
      what: "reward.claimed delivered",
    });
    const header = String(delivered.headers["service-signature"]);
    expect(() => verifySignature({ payload: delivered.rawBody, header, secrets: endpointSecret })).not.toThrow();
    const event = JSON.parse(delivered.rawBody.toString("utf8")) as Json;
    expect(event).toMatchObject({
      type: "reward.claimed",
      data: {
        rewardId,
        orderId: session.orderId,
        externalOrderId: session.externalOrderId,
        recipient: accountAddress(RECIPIENT),
        amount: "1500000",
        transactionHash: hash,
      },
    });
    const events = (await outboxEvents(stack, store)).filter((candidate) => candidate.type === "reward.claimed");
    expect(events.filter((candidate) => candidate.data.rewardId === rewardId)).toHaveLength(1);
  });

  it("refuses a replay on chain and a claim or revocation of the claimed reward", async () => {
    const replay = stack.wallet(THIRD_PARTY).writeContract({
      address: distributor(),
      abi: rewardDistributorAbi,
      functionName: "claim",
      args: [
        {
          ...claim.voucher,
          amount: BigInt(claim.voucher.amount),
          deadline: BigInt(claim.voucher.deadline),
        },
        claim.signature as Hex,
      ],
      chain: stack.chain,
      account: stack.wallet(THIRD_PARTY).account!,
    });
    expect(await revertErrorName(replay)).toBe("AlreadyClaimed");
    const tampered = stack.wallet(THIRD_PARTY).writeContract({
      address: distributor(),
      abi: rewardDistributorAbi,
      functionName: "claim",
      args: [
        {
          ...claim.voucher,
          rewardId: rewardIdOnChain("rw_other"),
          amount: BigInt(claim.voucher.amount) * 10n,
          deadline: BigInt(claim.voucher.deadline),
        },
        claim.signature as Hex,
      ],
      chain: stack.chain,
      account: stack.wallet(THIRD_PARTY).account!,
    });
    expect(await revertErrorName(tampered)).toBe("InvalidVoucherSignature");

    const again = await publicCall(`/v1/public/rewards/${rewardId}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "reward_not_claimable", reason: "claimed" });
    const revoke = await call(`/v1/rewards/${rewardId}/revoke`, { method: "POST", json: {} });
    expect(revoke.body).toMatchObject({ code: "reward_not_revocable", reason: "claimed" });
  });
});

describe("revoke, unfunded, cashback, gasless, unknown claims", () => {
  it("revokes a granted reward; a revoked reward cannot be claimed", async () => {
    const session = await settledSession("5000000");
    const granted = await grant(session.orderId, "100000");
    const revoked = await call(`/v1/rewards/${granted.body.id}/revoke`, {
      method: "POST",
      json: { reason: "goodwill withdrawn" },
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ status: "revoked", revokedReason: "goodwill withdrawn" });
    const claim = await publicCall(`/v1/public/rewards/${granted.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(claim.status).toBe(409);
    expect(claim.body).toMatchObject({ code: "reward_not_claimable", reason: "revoked" });
    // A revoked reward no longer counts against the amount paid.
    expect((await grant(session.orderId, BigInt(session.payment.amount).toString())).status).toBe(201);
  });

  it("answers reward_unfunded when the allowance cannot cover this reward plus the vouchers out", async () => {
    await approveDistributor(1_000_000n);
    await call("/v1/rewards/settings", { method: "PUT", json: {} });
    const session = await settledSession("5000000");
    const small = await grant(session.orderId, "600000", "small");
    const big = await grant(session.orderId, "600000", "big");
    const first = await publicCall(`/v1/public/rewards/${small.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(first.status).toBe(200);
    // 600 000 out + 600 000 > the 1 000 000 allowance.
    const second = await publicCall(`/v1/public/rewards/${big.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe("reward_unfunded");
    expect((await rewardOf(big.body.id)).status).toBe("granted");
    await approveDistributor(1_000_000_000n);
    await call("/v1/rewards/settings", { method: "PUT", json: {} });
  });

  it("grants the automatic cashback at settlement: floor(amountPaid × bps / 10 000)", async () => {
    await call("/v1/rewards/settings", { method: "PUT", json: { cashbackBps: 250 } });
    const session = await settledSession("12345678");
    const order = await readOrder(stack, session.orderId);
    expect(order.rewardIds).toHaveLength(1);
    const reward = await rewardOf(order.rewardIds[0]);
    expect(reward).toMatchObject({
      source: "cashback",
      status: "granted",
      amount: ((BigInt(session.payment.amount) * 250n) / 10_000n).toString(),
    });
    const settled = (await outboxEvents(stack, store)).find(
      (event) => event.type === "purchase.settled" && event.data.orderId === session.orderId,
    );
    expect(settled?.data.rewardIds).toEqual([reward.id]);
    await call("/v1/rewards/settings", { method: "PUT", json: { cashbackBps: 0 } });
  });

  it("claims without gas: the relayer submits, the recipient is paid and the reward becomes claimed", async () => {
    const session = await settledSession("3000000");
    const granted = await grant(session.orderId, "250000");
    const fresh = privateKeyToAccount(keccak256(toHex(`reward-gasless-${Date.now()}`))).address;
    // The relayed claim is charged to the shop like a gasless payment (issue 24): the admin's spend view counts it.
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const relaySpend = async () => {
      const response = await fetch(`${stack.ponder.baseUrl}/api/admin/relayed-authorizations`, {
        headers: { Authorization: `Bearer ${adminToken}` },
      });
      expect(response.status).toBe(200);
      const view = (await response.json()) as {
        spendByPartner: { partners: { partnerId: string; relays: number; spentWei: string }[] };
      };
      return view.spendByPartner.partners.find((row) => row.partnerId === stack.local.partner.id) ?? { relays: 0, spentWei: "0" };
    };
    const spendBefore = await relaySpend();
    const answer = await publicCall(`/v1/public/rewards/${granted.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: fresh,
      gasless: true,
    });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body)).toEqual(["transactionHash"]);
    const claimed = await waitForStatus(granted.body.id, "claimed");
    expect(claimed).toMatchObject({ recipient: fresh, transactionHash: answer.body.transactionHash });
    expect(await balanceOf(fresh)).toBe(250_000n);
    expect(await stack.publicClient.getBalance({ address: fresh })).toBe(0n);
    const spendAfter = await relaySpend();
    expect(spendAfter.relays).toBe(spendBefore.relays + 1);
    expect(BigInt(spendAfter.spentWei)).toBeGreaterThan(BigInt(spendBefore.spentWei));
  });

  it("records a claim of a reward the service does not know, for the admin", async () => {
    const voucherKey = readFileSync(voucherKeyFile(stack.dataDir), "utf8").trim() as Hex;
    const voucher = {
      rewardId: rewardIdOnChain("rw_not_ours"),
      funder: accountAddress(FUNDER),
      recipient: accountAddress(THIRD_PARTY),
      token: getAddress(stack.local.contracts.usdc),
      amount: 1_000n,
      deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
    };
    const signature = await signRewardVoucher({
      privateKey: (voucherKey.startsWith("0x") ? voucherKey : `0x${voucherKey}`) as Hex,
      chainId: 31337,
      contract: distributor(),
      voucher,
    });
    const wallet = stack.wallet(THIRD_PARTY);
    const hash = await wallet.writeContract({
      address: distributor(),
      abi: rewardDistributorAbi,
      functionName: "claim",
      args: [voucher, signature],
      chain: stack.chain,
      account: wallet.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash });
    const token = await signIn(stack, "admin", adminWallet(stack));
    const listed = await waitFor(
      async () => {
        const response = await fetch(`${stack.ponder.baseUrl}/api/admin/reward-claims`, {
          headers: { Authorization: `Bearer ${token}` },
        });
        const body = (await response.json()) as Json;
        return body.data?.find((row: Json) => row.transactionHash === hash);
      },
      { what: "unknown claim listed" },
    );
    expect(listed).toMatchObject({
      reason: "unknown_reward",
      amount: "1000",
      recipient: accountAddress(THIRD_PARTY),
      rewardId: null,
    });
    const asPartner = await call("/api/admin/reward-claims");
    expect(asPartner.status).toBe(401);
  });
});

describe("attack review (issue 40): relayed dust, a claim reorged away", () => {
  it("does not relay a reward below the smallest relayed amount (finding 6)", async () => {
    const session = await settledSession("1000000");
    const dust = await grant(session.orderId, "1", "dust");
    const relayed = await publicCall(`/v1/public/rewards/${dust.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
      gasless: true,
    });
    expect(relayed.status).toBe(422);
    expect(relayed.body).toMatchObject({ code: "relay_amount_too_small", minAmount: "100000" });
    expect((await rewardOf(dust.body.id)).status).toBe("granted");
  });

  it("a claimed reward whose claim is reorged away can be claimed again (finding 5)", async () => {
    const session = await settledSession("2000000");
    const granted = await grant(session.orderId, "200000", "reorged-claim");
    const answer = await publicCall(`/v1/public/rewards/${granted.body.id}/claim`, {
      clientToken: session.clientToken,
      walletAddress: accountAddress(RECIPIENT),
    });
    expect(answer.status).toBe(200);
    const claimer = stack.wallet(THIRD_PARTY);
    const send = () =>
      claimer.sendTransaction({
        to: answer.body.transaction.to,
        data: answer.body.transaction.data,
        chain: stack.chain,
        account: claimer.account!,
      });
    const hash = await send();
    const receipt = await stack.publicClient.waitForTransactionReceipt({ hash });
    await waitForStatus(granted.body.id, "claimed");
    // The claim's block and every one after it are replaced by empty blocks.
    const depth = Number((await stack.publicClient.getBlockNumber()) - receipt.blockNumber + 1n);
    await stack.reorg(depth);
    await stack.testClient.mine({ blocks: 1 });
    const claimedOnChain = () =>
      stack.publicClient.readContract({
        address: distributor(),
        abi: rewardDistributorAbi,
        functionName: "claimed",
        args: [keccak256(toHex(granted.body.id))],
      });
    expect(await claimedOnChain()).toBe(false);
    const back = await waitForStatus(granted.body.id, "voucher_issued", 45_000);
    expect(back).toMatchObject({ transactionHash: null, claimedAt: null });
    const reorged = await waitFor(
      async () =>
        (await outboxEvents(stack, store)).find(
          (event) => event.type === "reward.reorged" && event.data.rewardId === granted.body.id,
        ),
      { what: "reward.reorged recorded" },
    );
    expect(reorged.data).toMatchObject({ status: "voucher_issued", transactionHash: hash, amount: "200000" });

    // The voucher is still good: the customer claims again and is paid.
    const again = await send();
    expect((await stack.publicClient.waitForTransactionReceipt({ hash: again })).status).toBe("success");
    expect(await waitForStatus(granted.body.id, "claimed")).toMatchObject({ transactionHash: again });
    expect(await claimedOnChain()).toBe(true);
  });
});

describe("the client library's reward methods", () => {
  it("reads settings, grants (idempotently), lists, reads and revokes; a refusal carries its code", async () => {
    const client = createClient({ apiKey: stack.local.partner.apiKey, network: "local", baseUrl: stack.local.baseUrl });
    const settings = await client.rewards.settings.retrieve();
    expect(settings.fundingAddress).toBe(accountAddress(FUNDER));
    expect((await client.rewards.settings.update({ cashbackBps: 0 })).cashbackBps).toBe(0);
    const session = await settledSession("4000000");
    const granted = await client.rewards.grant(session.orderId, { amount: 300_000n, idempotencyKey: "client-1" });
    expect(granted).toMatchObject({ status: "granted", amount: "300000", orderId: session.orderId });
    expect((await client.rewards.grant(session.orderId, { amount: "300000", idempotencyKey: "client-1" })).id).toBe(granted.id);
    const page = await client.rewards.list({ orderId: session.orderId });
    expect(page.data.map((reward) => reward.id)).toEqual([granted.id]);
    expect((await client.rewards.retrieve(granted.id)).status).toBe("granted");
    expect(await client.rewards.revoke(granted.id, { reason: "client test" })).toMatchObject({ status: "revoked" });
    const refused = await client.rewards.revoke(granted.id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SettlementApiError);
    expect((refused as SettlementApiError).code).toBe("reward_not_revocable");
  });
});
