import { type Address, erc20Abi, type Hex, type PublicClient, parseEther, toHex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  readTokenDomain,
  type TokenDomain,
  type TransferAuthorization,
  transferAuthorizationTypedData,
  transferWithAuthorizationTypes,
} from "../api/gasless/eip3009.js";
import { testUsdcAbi } from "../contracts/generated/index.js";
import { localRelayerAccount } from "../local/local-secrets.js";
import { type CreatedSession, createSession, publicPost, readOrder, readSession } from "./support/checkout-helpers.js";
import { accountWallet, adminWallet, api, expectJson, openOffering, registerIssuer, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Gasless payment end to end on one real stack: a customer holding USDC and no ETH
// signs an EIP-3009 authorization, the service's relayer submits it, the session
// settles from the index; then every way to abuse the route, and the relayer's faults.

let stack: TestStack;
const relayer = localRelayerAccount();

beforeAll(async () => {
  // Replacement of a stuck transaction after 2 s, so the test can watch one happen.
  stack = await startTestStack({ env: { RELAYER_REPLACE_AFTER_SECONDS: "2" } });
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

/** A fresh wallet with `usdc` base units and no ETH at all. */
async function walletWithUsdcOnly(usdc: bigint): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  if (usdc > 0n) await stack.payUsdc({ from: 0, to: account.address, amount: usdc });
  return account;
}

/** The customer's session read; with `payer`, it carries the typed data that wallet signs. */
async function validate(session: CreatedSession, payer?: Address) {
  return expectJson(
    await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/validate`, {
      clientToken: session.clientToken,
      ...(payer === undefined ? {} : { payer }),
    }),
    200,
  );
}

type ServedTypedData = {
  types: Record<string, { name: string; type: string }[]>;
  primaryType: "TransferWithAuthorization";
  domain: TokenDomain;
  message: Record<keyof TransferAuthorization, string>;
};

/** Signs served typed data as an `eth_signTypedData_v4` wallet does: the JSON as it came, `EIP712Domain` from the domain. */
function signAsWallet(account: PrivateKeyAccount, typedData: ServedTypedData) {
  const { EIP712Domain: _domainType, ...types } = JSON.parse(JSON.stringify(typedData.types));
  return account.signTypedData({ ...JSON.parse(JSON.stringify(typedData)), types });
}

/** What a session's typed data must say for `from`: exactly the session's payment, valid until its expiry. */
const servedMessageFor = (payment: { recipient: string; amount: string }, expiresAt: string, from: Address) => ({
  from,
  to: payment.recipient,
  value: payment.amount,
  validAfter: "0",
  validBefore: String(Math.floor(Date.parse(expiresAt) / 1000)),
  nonce: expect.stringMatching(/^0x[0-9a-f]{64}$/),
});

/** The token's EIP-712 domain, read from the chain as a wallet would be told it. */
const tokenDomain = () =>
  readTokenDomain(stack.publicClient as PublicClient, {
    token: stack.local.contracts.usdc as Address,
    chainId: stack.local.chainId,
  });

async function sign(account: PrivateKeyAccount, auth: TransferAuthorization, domain?: TokenDomain) {
  return account.signTypedData(transferAuthorizationTypedData(domain ?? (await tokenDomain()), auth));
}

/** The authorization the hosted page builds for a session: exact amount, payment address, session's expiry, random nonce. */
async function authorizationFor(session: CreatedSession, from: Address, overrides: Partial<TransferAuthorization> = {}) {
  return {
    from,
    to: session.payment.recipient,
    value: BigInt(session.payment.amount),
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.parse(session.expiresAt) / 1000)),
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
    ...overrides,
  } satisfies TransferAuthorization;
}

const wire = (auth: TransferAuthorization) => ({
  from: auth.from,
  to: auth.to,
  value: auth.value.toString(),
  validAfter: auth.validAfter.toString(),
  validBefore: auth.validBefore.toString(),
  nonce: auth.nonce,
});

function postAuthorization(
  session: CreatedSession,
  auth: TransferAuthorization,
  signature: Hex,
  extra: Record<string, unknown> = {},
) {
  return publicPost(stack, `/v1/public/checkout/sessions/${session.id}/authorizations`, {
    clientToken: session.clientToken,
    authorization: wire(auth),
    signature,
    ...extra,
  });
}

async function expectProblem(response: Response, status: number, code: string) {
  const body = await response.json();
  expect({ status: response.status, code: body.code }).toEqual({ status, code });
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  return body;
}

const authorizationUsed = (from: Address, nonce: Hex) =>
  stack.publicClient.readContract({
    address: stack.local.contracts.usdc as Address,
    abi: testUsdcAbi,
    functionName: "authorizationState",
    args: [from, nonce],
  });

async function waitSettled(session: CreatedSession) {
  return waitFor(
    async () => {
      const view = await validate(session);
      return view.status === "settled" ? view : undefined;
    },
    { timeoutMs: 30_000, what: `session ${session.id} settled` },
  );
}

describe("a customer with USDC and no ETH pays by signature", () => {
  it("relays the authorization, settles from the index, and shows the gas to partner and admin", {
    timeout: 60_000,
  }, async () => {
    const session = await createSession(stack);
    const payer = await walletWithUsdcOnly(BigInt(session.payment.amount));
    expect(await stack.publicClient.getBalance({ address: payer.address })).toBe(0n);

    const view = await validate(session);
    expect(view.gasless.available).toBe(true);
    expect(view.gasless.domain).toMatchObject({ name: "USD Coin", chainId: stack.local.chainId });
    // No wallet named, no typed data: its `from` is the payer's.
    expect(view.gasless.typedData).toBeNull();

    // The read naming the customer's wallet serves what that wallet signs: the session's exact payment, the one type list.
    const served: ServedTypedData = (await validate(session, payer.address)).gasless.typedData;
    expect(served.message).toEqual(servedMessageFor(session.payment, session.expiresAt, payer.address));
    expect(served.domain).toEqual(view.gasless.domain);
    expect(served.primaryType).toBe("TransferWithAuthorization");
    expect(served.types.TransferWithAuthorization).toEqual(transferWithAuthorizationTypes.TransferWithAuthorization);
    expect(served.types.EIP712Domain?.map((field) => field.name)).toEqual(["name", "version", "chainId", "verifyingContract"]);
    // A fresh nonce on every read.
    const reread: ServedTypedData = (await validate(session, payer.address)).gasless.typedData;
    expect(reread.message.nonce).not.toBe(served.message.nonce);

    // Signed exactly as served, it pays.
    const signature = await signAsWallet(payer, served);
    const submission = {
      clientToken: session.clientToken,
      authorization: served.message,
      signature,
      domain: { chainId: served.domain.chainId, verifyingContract: served.domain.verifyingContract },
    };
    const response = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/authorizations`, submission);
    const answer = await expectJson(response, 200);
    expect(answer.transactionHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(answer.relayer).toBe(relayer.address);

    const receipt = await stack.publicClient.waitForTransactionReceipt({ hash: answer.transactionHash });
    expect(receipt.from.toLowerCase()).toBe(relayer.address.toLowerCase());
    const settled = await waitSettled(session);
    expect(settled.transactionHash).toBe(answer.transactionHash);
    expect(await stack.publicClient.getBalance({ address: payer.address })).toBe(0n);

    // Gas spent on this payment: on the partner's order and in the admin's list.
    const order = await waitFor(
      async () => {
        const read = await readOrder(stack, settled.orderId);
        return read.payment?.relay?.gasCostWei ? read : undefined;
      },
      { what: "gas recorded" },
    );
    expect(order.payment.from.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(BigInt(order.payment.relay.gasCostWei)).toBe(receipt.gasUsed * receipt.effectiveGasPrice);
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const list = await expectJson(await api(stack, "GET", "/api/admin/relayed-authorizations", { token: adminToken }), 200);
    const listed = list.data.find((row: { transactionHash: string }) => row.transactionHash === answer.transactionHash);
    expect(listed).toMatchObject({ status: "mined", sessionId: session.id, gasCostWei: order.payment.relay.gasCostWei });
    // The partner's key cannot read the admin list.
    expect((await stack.partnerFetch("/api/admin/relayed-authorizations")).status).toBe(401);

    // The same authorization again: the same answer, nothing sent twice.
    const replay = await expectJson(
      await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/authorizations`, submission),
      200,
    );
    expect(replay.transactionHash).toBe(answer.transactionHash);
  });

  it("reports the relayer and its ETH balance in health", async () => {
    const health = await expectJson(await fetch(`${stack.ponder.baseUrl}/v1/health`), 200);
    expect(health.relayers).toEqual([
      expect.objectContaining({ network: "local", address: relayer.address, lowBalance: false, warning: null }),
    ]);
    expect(BigInt(health.relayers[0].balanceWei)).toBeGreaterThan(parseEther("1"));
  });
});

describe("refusals: each a distinct problem, nothing submitted", () => {
  let payer: PrivateKeyAccount;
  let session: CreatedSession;
  let other: CreatedSession;

  beforeAll(async () => {
    session = await createSession(stack);
    other = await createSession(stack, { totalPriceUsdc: "7000000" });
    payer = await walletWithUsdcOnly(100_000_000n);
  });

  const refused = async (auth: TransferAuthorization, status: number, code: string, signature?: Hex, target = session) => {
    await expectProblem(await postAuthorization(target, auth, signature ?? (await sign(payer, auth))), status, code);
    expect(await authorizationUsed(auth.from, auth.nonce)).toBe(false);
  };

  it("an authorization made for another session, amount or recipient", async () => {
    await refused(await authorizationFor(other, payer.address), 422, "authorization_wrong_amount");
    await refused(
      await authorizationFor(session, payer.address, { value: BigInt(session.payment.amount) - 1n }),
      422,
      "authorization_wrong_amount",
    );
    await refused(
      await authorizationFor(session, payer.address, { to: stack.local.accounts[9]!.address as Address }),
      422,
      "authorization_wrong_recipient",
    );
    // Another session's client token does not open this one.
    const auth = await authorizationFor(session, payer.address);
    const response = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/authorizations`, {
      clientToken: other.clientToken,
      authorization: wire(auth),
      signature: await sign(payer, auth),
    });
    await expectProblem(response, 401, "invalid_client_token");
  });

  it("expired, not yet valid, or outliving the session", async () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    await refused(await authorizationFor(session, payer.address, { validBefore: now - 10n }), 422, "authorization_expired");
    await refused(await authorizationFor(session, payer.address, { validBefore: now + 5n }), 422, "authorization_expired");
    await refused(await authorizationFor(session, payer.address, { validAfter: now + 600n }), 422, "authorization_not_yet_valid");
    const expiry = BigInt(Math.floor(Date.parse(session.expiresAt) / 1000));
    await refused(
      await authorizationFor(session, payer.address, { validBefore: expiry + 1n }),
      422,
      "authorization_outlives_session",
    );
  });

  it("a wrong signer, another network or token, no USDC", async () => {
    const auth = await authorizationFor(session, payer.address);
    await refused(
      auth,
      422,
      "authorization_bad_signature",
      await privateKeyToAccount(generatePrivateKey()).signTypedData(transferAuthorizationTypedData(await tokenDomain(), auth)),
    );
    const domain = (await tokenDomain()) as TokenDomain;
    await refused(auth, 422, "authorization_bad_signature", await sign(payer, auth, { ...domain, chainId: 8453 }));
    await expectProblem(
      await postAuthorization(session, auth, await sign(payer, auth), { domain: { chainId: 8453 } }),
      422,
      "authorization_wrong_network",
    );
    await expectProblem(
      await postAuthorization(session, auth, await sign(payer, auth), {
        domain: { verifyingContract: stack.local.contracts.certificate },
      }),
      422,
      "authorization_wrong_token",
    );
    const broke = await walletWithUsdcOnly(0n);
    const unfunded = await authorizationFor(session, broke.address);
    await refused(unfunded, 422, "authorization_insufficient_balance", await sign(broke, unfunded));
  });

  it("an authorization its holder cancelled on chain", async () => {
    const holder = stack.wallet(6);
    const signer = privateKeyToAccount(stack.local.accounts[6]!.privateKey as Hex);
    const auth = await authorizationFor(session, signer.address);
    const domain = (await tokenDomain()) as TokenDomain;
    const signature = await signer.signTypedData(transferAuthorizationTypedData(domain, auth));
    const cancel = await signer.signTypedData({
      domain,
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: auth.from, nonce: auth.nonce },
    });
    const hash = await holder.writeContract({
      address: stack.local.contracts.usdc as Address,
      abi: testUsdcAbi,
      functionName: "cancelAuthorization",
      args: [auth.from, auth.nonce, cancel],
      chain: stack.chain,
      account: holder.account!,
    });
    await stack.publicClient.waitForTransactionReceipt({ hash });
    await expectProblem(await postAuthorization(session, auth, signature), 409, "authorization_used");
  });

  it("a replayed authorization on another session", async () => {
    const target = await createSession(stack, { totalPriceUsdc: "3000000" });
    const auth = await authorizationFor(target, payer.address);
    const signature = await sign(payer, auth);
    const second = await authorizationFor(target, payer.address);
    // Blocks held back, so the first relay is still in flight when the others arrive.
    await stack.testClient.setAutomine(false);
    let first: { transactionHash: Hex };
    try {
      first = await expectJson(await postAuthorization(target, auth, signature), 200);
      await expectProblem(await postAuthorization(session, auth, signature), 409, "authorization_already_submitted");
      // A second, different authorization for the same session while the first is live.
      await expectProblem(await postAuthorization(target, second, await sign(payer, second)), 409, "authorization_in_progress");
      expect(await authorizationUsed(payer.address, second.nonce)).toBe(false);
    } finally {
      await stack.testClient.setAutomine(true);
    }
    await stack.testClient.mine({ blocks: 1 });
    await stack.publicClient.waitForTransactionReceipt({ hash: first.transactionHash });
    await waitSettled(target);
  });

  it("a session already paid by a racing plain transfer", async () => {
    const raced = await createSession(stack, { totalPriceUsdc: "4000000" });
    const auth = await authorizationFor(raced, payer.address);
    const signature = await sign(payer, auth);
    await stack.payUsdc({ from: 2, to: raced.payment.recipient, amount: BigInt(raced.payment.amount) });
    await waitFor(async () => ((await readSession(stack, raced.id)).status !== "awaiting_payment" ? true : undefined), {
      what: "plain transfer seen",
    });
    await refused(auth, 409, "session_not_open", signature, raced);
    const settled = await waitSettled(raced);
    expect(settled.gasless.authorization).toBeNull();
  });
});

describe("relayer faults", () => {
  it("out of ETH: refused, reported on the session and in health; the session still takes a payment afterwards", {
    timeout: 60_000,
  }, async () => {
    const session = await createSession(stack, { totalPriceUsdc: "5000000" });
    const payer = await walletWithUsdcOnly(BigInt(session.payment.amount));
    const funded = await stack.publicClient.getBalance({ address: relayer.address });
    await stack.testClient.setBalance({ address: relayer.address, value: 0n });
    try {
      const auth = await authorizationFor(session, payer.address);
      await expectProblem(await postAuthorization(session, auth, await sign(payer, auth)), 503, "relayer_out_of_funds");
      expect(await authorizationUsed(payer.address, auth.nonce)).toBe(false);
      const view = await validate(session);
      expect(view.status).toBe("awaiting_payment");
      expect(view.gasless.authorization).toMatchObject({ status: "failed", failure: { code: "relayer_out_of_funds" } });
      const partnerView = await readSession(stack, session.id);
      expect(
        (partnerView as unknown as { gasless: { authorization: { failure: { code: string } } } }).gasless.authorization.failure
          .code,
      ).toBe("relayer_out_of_funds");
      // Under its balance floor the relayer degrades health (docs/security.md, relayer limits).
      const health = await expectJson(await fetch(`${stack.ponder.baseUrl}/v1/health`), 503);
      expect(health.status).toBe("degraded");
      expect(health.reasons).toContainEqual(expect.objectContaining({ check: "relayer", code: "relayer_balance_low" }));
      expect(health.relayers[0]).toMatchObject({ balanceWei: "0", lowBalance: true, belowFloor: true });
      expect(health.relayers[0].warning).toMatch(/low on ETH/);
    } finally {
      await stack.testClient.setBalance({ address: relayer.address, value: funded });
    }
    const retry = await authorizationFor(session, payer.address);
    const answer = await expectJson(await postAuthorization(session, retry, await sign(payer, retry)), 200);
    await stack.publicClient.waitForTransactionReceipt({ hash: answer.transactionHash });
    await waitSettled(session);
  });

  it("a stuck transaction is replaced with a higher fee, and the replacement settles the session", {
    timeout: 120_000,
  }, async () => {
    const session = await createSession(stack, { totalPriceUsdc: "6000000" });
    const payer = await walletWithUsdcOnly(BigInt(session.payment.amount));
    const auth = await authorizationFor(session, payer.address);
    const signature = await sign(payer, auth);
    await stack.testClient.setAutomine(false);
    let first: { transactionHash: Hex };
    try {
      first = await expectJson(await postAuthorization(session, auth, signature), 200);
      const original = await stack.publicClient.getTransaction({ hash: first.transactionHash });
      const replaced = await waitFor(
        async () => {
          const relay = (await validate(session)).gasless.authorization;
          return relay.transactionHash !== first.transactionHash ? relay : undefined;
        },
        { timeoutMs: 60_000, what: "a replacement transaction" },
      );
      expect(replaced.replacedTransactions).toEqual([first.transactionHash]);
      const replacement = await stack.publicClient.getTransaction({ hash: replaced.transactionHash });
      expect(replacement.nonce).toBe(original.nonce);
      expect(replacement.maxFeePerGas!).toBeGreaterThan(original.maxFeePerGas!);
      expect(replacement.maxPriorityFeePerGas!).toBeGreaterThan(original.maxPriorityFeePerGas!);
      // One transaction of the relayer waits in the pool, not two.
      const [pending, latest] = await Promise.all([
        stack.publicClient.getTransactionCount({ address: relayer.address, blockTag: "pending" }),
        stack.publicClient.getTransactionCount({ address: relayer.address, blockTag: "latest" }),
      ]);
      expect(pending - latest).toBe(1);
    } finally {
      await stack.testClient.setAutomine(true);
    }
    await stack.testClient.mine({ blocks: 1 });
    const settled = await waitSettled(session);
    expect(settled.transactionHash).not.toBe(first.transactionHash);
    expect(
      await stack.publicClient.readContract({
        address: stack.local.contracts.usdc as Address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [payer.address],
      }),
    ).toBe(0n);
  });
});

describe("RWA: the investor pays a purchase by signature", () => {
  it("accepts the investor's own authorization and refuses another wallet's", { timeout: 60_000 }, async () => {
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const issuer = await registerIssuer(stack, adminToken, accountWallet(stack, 8), "Harbour Capital");
    const offeringId = await openOffering(stack, { issuer: issuer.token, admin: adminToken });
    const investorWallet = accountWallet(stack, 4);
    const investorToken = await signIn(stack, "investor", investorWallet);
    const purchase = await expectJson(
      await api(stack, "POST", "/api/rwa/checkout", { token: investorToken, json: { offeringId, units: 2 } }),
      201,
    );
    const investor = privateKeyToAccount(investorWallet.privateKey);
    const domain = await tokenDomain();
    const authFor = (from: Address): TransferAuthorization => ({
      from,
      to: purchase.payment.recipient,
      value: BigInt(purchase.payment.amount),
      validAfter: 0n,
      validBefore: BigInt(Math.floor(Date.parse(purchase.expiresAt) / 1000)),
      nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
    });
    const stranger = await walletWithUsdcOnly(BigInt(purchase.payment.amount));
    const strangers = authFor(stranger.address);
    const refused = await api(stack, "POST", "/api/rwa/settlements/authorization", {
      token: investorToken,
      json: {
        purchaseId: purchase.id,
        authorization: wire(strangers),
        signature: await stranger.signTypedData(transferAuthorizationTypedData(domain, strangers)),
      },
    });
    await expectProblem(refused, 422, "authorization_wrong_payer");

    // The purchase's gasless read serves what the signed-in investor's wallet signs; signed as served, it pays.
    const read = await expectJson(
      await api(stack, "GET", `/api/rwa/settlements/authorization/${purchase.id}`, { token: investorToken }),
      200,
    );
    const served: ServedTypedData = read.typedData;
    expect(served.message).toEqual(servedMessageFor(purchase.payment, purchase.expiresAt, investor.address));
    expect(served.domain).toEqual(read.domain);
    const answer = await expectJson(
      await api(stack, "POST", "/api/rwa/settlements/authorization", {
        token: investorToken,
        json: {
          purchaseId: purchase.id,
          authorization: served.message,
          signature: await signAsWallet(investor, served),
          domain: { chainId: served.domain.chainId, verifyingContract: served.domain.verifyingContract },
        },
      }),
      200,
    );
    expect(answer.purchaseId).toBe(purchase.id);
    await stack.publicClient.waitForTransactionReceipt({ hash: answer.transactionHash });
    await waitFor(
      async () => {
        const read = await expectJson(await api(stack, "GET", `/api/rwa/checkout/${purchase.id}`, { token: investorToken }), 200);
        return read.status === "settled" ? read : undefined;
      },
      { timeoutMs: 30_000, what: "purchase settled" },
    );
  });
});
