import { type Address, type Hex, type PublicClient, parseEther, toHex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  readTokenDomain,
  type TokenDomain,
  type TransferAuthorization,
  transferAuthorizationTypedData,
} from "../api/gasless/eip3009.js";
import { localRelayerAccount } from "../local/local-secrets.js";
import { type CreatedSession, createSession, publicPost } from "./support/checkout-helpers.js";
import { adminWallet, api, expectJson, signIn } from "./support/portal-client.js";
import { startTestStack, type TestStack } from "./support/test-stack.js";

// Issue 24, finding 3: the shared relayer cannot be drained. One partner's storefront
// (or one anonymous customer of it) posts 500 dust authorizations, then more than its
// daily quota of real ones; the relayer sends none of the dust and stops at the quota.
// The per-IP rate limits are lifted here, so that only the relayer's own limits refuse.
const MIN_AMOUNT = 1_000_000n;
const DAILY_RELAYS = 5;

let stack: TestStack;
let domain: TokenDomain;
const relayer = localRelayerAccount();

beforeAll(async () => {
  stack = await startTestStack({
    env: {
      RELAYER_MIN_AMOUNT: MIN_AMOUNT.toString(),
      RELAYER_PARTNER_DAILY_RELAYS: String(DAILY_RELAYS),
      RELAYER_BALANCE_FLOOR_WEI: parseEther("1").toString(),
      LOOKUP_RATE_LIMIT: "100000",
      PUBLIC_RATE_LIMIT: "100000",
    },
  });
  domain = await readTokenDomain(stack.publicClient as PublicClient, {
    token: stack.local.contracts.usdc as Address,
    chainId: stack.local.chainId,
  });
}, 300_000);
afterAll(async () => {
  await stack?.stop();
});

async function walletWithUsdcOnly(usdc: bigint): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await stack.payUsdc({ from: 0, to: account.address, amount: usdc });
  return account;
}

async function authorize(session: CreatedSession, payer: PrivateKeyAccount) {
  const auth = {
    from: payer.address,
    to: session.payment.recipient,
    value: BigInt(session.payment.amount),
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.parse(session.expiresAt) / 1000)),
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
  } satisfies TransferAuthorization;
  const signature = await payer.signTypedData(transferAuthorizationTypedData(domain, auth));
  return publicPost(stack, `/v1/public/checkout/sessions/${session.id}/authorizations`, {
    clientToken: session.clientToken,
    authorization: {
      from: auth.from,
      to: auth.to,
      value: auth.value.toString(),
      validAfter: "0",
      validBefore: auth.validBefore.toString(),
      nonce: auth.nonce,
    },
    signature: signature as Hex,
  });
}

const relayerNonce = () => stack.publicClient.getTransactionCount({ address: relayer.address as Address, blockTag: "pending" });

describe("the relayer's limits", () => {
  it("sends none of 500 dust authorizations, and stops one partner at its daily quota with a retryable problem", {
    timeout: 300_000,
  }, async () => {
    const before = await relayerNonce();
    const payer = await walletWithUsdcOnly(10_000_000n);
    const answers = new Map<string, number>();
    // 500 sessions of 0.001 USDC, each paid by a signed authorization, 20 at a time. The
    // relayer's nonce is read after every batch, so a service that relays dust fails fast.
    for (let batch = 0; batch < 25; batch++) {
      const results = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const session = await createSession(stack, { totalPriceUsdc: "1000" });
          const response = await authorize(session, payer);
          const body = await response.json();
          return `${response.status} ${body.code ?? body.status}`;
        }),
      );
      for (const result of results) answers.set(result, (answers.get(result) ?? 0) + 1);
      expect((await relayerNonce()) - before, `relayed after batch ${batch}: ${JSON.stringify([...answers])}`).toBe(0);
    }
    expect([...answers]).toEqual([["422 relay_amount_too_small", 500]]);

    // Real amounts: the quota's worth goes through, the next is refused until the next UTC day.
    const buyer = await walletWithUsdcOnly(20_000_000n);
    const sent: number[] = [];
    for (let index = 0; index <= DAILY_RELAYS; index++) {
      const session = await createSession(stack, { totalPriceUsdc: "2000000" });
      const response = await authorize(session, buyer);
      sent.push(response.status);
      if (index === DAILY_RELAYS) {
        const problem = await response.json();
        expect(problem).toMatchObject({ code: "relay_quota_exceeded", retryable: true });
        expect(response.headers.get("content-type")).toContain("application/problem+json");
        const retryAfter = Number(response.headers.get("Retry-After"));
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
      } else {
        expect(response.status, await response.text()).toBe(200);
      }
    }
    expect(sent).toEqual([200, 200, 200, 200, 200, 429]);
    expect((await relayerNonce()) - before).toBe(DAILY_RELAYS);

    // The admin sees what the relayer spent for the partner today.
    const adminToken = await signIn(stack, "admin", adminWallet(stack));
    const view = await expectJson(await api(stack, "GET", "/api/admin/relayed-authorizations", { token: adminToken }), 200);
    const spend = view.spendByPartner.partners.find((row: { partnerId: string }) => row.partnerId === stack.local.partner.id);
    expect(spend).toMatchObject({ chainId: stack.local.chainId, relays: DAILY_RELAYS });
    expect(BigInt(spend.spentWei)).toBeGreaterThan(0n);
    expect(view.spendByPartner).toMatchObject({ partnerDailyRelays: DAILY_RELAYS });
  });

  it("answers health `degraded` while the relayer's balance is under its floor", async () => {
    const health = async () => {
      const response = await fetch(`${stack.ponder.baseUrl}/v1/health`);
      return { status: response.status, body: await response.json() };
    };
    expect((await health()).body.reasons).toEqual([]);
    await stack.testClient.setBalance({ address: relayer.address as Address, value: parseEther("0.5") });
    try {
      const low = await health();
      expect(low.status).toBe(503);
      expect(low.body.status).toBe("degraded");
      expect(low.body.reasons).toEqual([expect.objectContaining({ check: "relayer", code: "relayer_balance_low" })]);
      expect(low.body.relayers[0]).toMatchObject({ belowFloor: true, balanceFloorWei: parseEther("1").toString() });
    } finally {
      await stack.testClient.setBalance({ address: relayer.address as Address, value: parseEther("100") });
    }
    expect((await health()).body.status).toBe("ok");
  });
});
