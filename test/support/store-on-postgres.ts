import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifySignature } from "../../client/src/signature.js";
import { createSession, publicPost, readOrder, readSession, sessionBody, submitHash } from "./checkout-helpers.js";
import type { TestStack } from "./test-stack.js";
import { waitFor } from "./test-stack.js";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

/**
 * The checkout flow against a service whose own state is on Postgres instead of
 * SQLite: the store's Kysely code must not depend on the dialect. Each test file
 * runs it on one kind of Postgres.
 */
export function describeStoreOnPostgres(
  title: string,
  options: {
    start: () => Promise<{ stack: TestStack; stop: () => Promise<void> }>;
    /** Asserts that the state (60 sessions by then) really lives where this variant puts it. */
    storedWhereExpected: (stack: TestStack) => Promise<void>;
    /** Tests only this variant can run, on the suite's stack and webhook receiver. */
    moreTests?: (current: () => { stack: TestStack; receiver: WebhookReceiver }) => void;
  },
) {
  describe(title, () => {
    let stack: TestStack;
    let stop: (() => Promise<void>) | undefined;
    let receiver: WebhookReceiver;
    let secret: string;

    beforeAll(async () => {
      ({ stack, stop } = await options.start());
      receiver = await startWebhookReceiver();
      const endpoint = await (
        await stack.partnerFetch("/v1/webhook-endpoints", { method: "POST", json: { url: receiver.url("/hooks") } })
      ).json();
      secret = endpoint.secret;
    });
    afterAll(async () => {
      await receiver?.close();
      await stop?.();
    });

    it("runs its migrations and allocates distinct references under concurrency", async () => {
      expect(existsSync(join(stack.dataDir, "app.sqlite"))).toBe(false);
      const sessions = await Promise.all(Array.from({ length: 60 }, () => createSession(stack, { totalPriceUsdc: "5000000" })));
      expect(new Set(sessions.map((session) => session.payment.amount)).size).toBe(60);
      await options.storedWhereExpected(stack);
    });

    it("settles, signs and delivers the event, fulfils, and mints the certificate", async () => {
      const session = await createSession(stack);
      const paid = await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
      const submitted = await waitFor(async () => {
        const body = await (await submitHash(stack, session.clientToken, paid.hash)).json();
        return body.status === "settled" ? body : undefined;
      });
      expect(submitted.transactionHash).toBe(paid.hash);

      const delivered = await waitFor(async () =>
        receiver.acknowledged.find(
          (hook) => hook.type === "purchase.settled" && JSON.parse(hook.rawBody.toString()).data.orderId === session.orderId,
        ),
      );
      expect(() =>
        verifySignature({ payload: delivered.rawBody, header: String(delivered.headers["service-signature"]), secrets: secret }),
      ).not.toThrow();
      expect(JSON.parse(delivered.rawBody.toString()).data).toMatchObject({
        transactionHash: paid.hash,
        amountPaid: session.payment.amount,
      });

      const fulfil = await stack.partnerFetch(`/v1/orders/${session.orderId}/fulfilment`, {
        method: "POST",
        json: { fulfilmentReference: "parcel-1", idempotencyKey: "fulfil-1" },
      });
      expect(fulfil.status).toBe(200);
      expect((await readOrder(stack, session.orderId)).status).toBe("fulfilled");

      const buyer = stack.wallet(2);
      const claim = await (
        await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/claim`, {
          clientToken: session.clientToken,
          walletAddress: buyer.account!.address,
        })
      ).json();
      const hash = await buyer.sendTransaction({
        to: claim.transaction.to as Address,
        data: claim.transaction.data as Hex,
        chain: stack.chain,
        account: buyer.account!,
      });
      await stack.publicClient.waitForTransactionReceipt({ hash });
      await waitFor(async () => ((await readOrder(stack, session.orderId)).certificate.status === "minted" ? true : undefined));
    });

    it("keeps idempotency, replay and unresolved payments the same", async () => {
      const body = sessionBody();
      expect((await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: body })).status).toBe(201);
      const conflict = await stack.partnerFetch("/v1/checkout/sessions", { method: "POST", json: { ...body, quantity: 2 } });
      expect((await conflict.json()).code).toBe("idempotency_conflict");

      const victim = await createSession(stack, { certificate: { enabled: false } });
      const attacker = await createSession(stack);
      const paid = await stack.payUsdc({ from: 3, to: victim.payment.recipient, amount: BigInt(victim.payment.amount) });
      await waitFor(async () => ((await readSession(stack, victim.id)).status === "settled" ? true : undefined));
      expect((await (await submitHash(stack, attacker.clientToken, paid.hash)).json()).code).toBe("replay");

      const stray = await stack.payUsdc({ from: 3, to: victim.payment.recipient, amount: 17n });
      const unresolved = await waitFor(async () => {
        const page = await (await stack.partnerFetch("/v1/payments?status=unresolved")).json();
        return page.data.find((payment: { transactionHash: string }) => payment.transactionHash === stray.hash);
      });
      expect(unresolved).toMatchObject({ amount: "17", reason: "unmatched" });
    });

    options.moreTests?.(() => ({ stack, receiver }));
  });
}
