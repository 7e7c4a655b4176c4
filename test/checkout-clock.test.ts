import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore, type Store } from "../api/store/open-store.js";
import { createSession, outboxEvents, publicPost, readSession, submitHash } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// This chain starts a day behind the wall clock and needs 3 confirmations, so a
// test can pay "before" a session existed, pay after it expired, and watch a
// payment wait for its confirmations.
let stack: TestStack;
let store: Store;
const DAY = 86_400;

beforeAll(async () => {
  stack = await startTestStack({ genesisTimestamp: Math.floor(Date.now() / 1000) - DAY, env: { LOCAL_CONFIRMATIONS: "3" } });
  store = openSqliteStore(join(stack.dataDir, "app.sqlite"));
});
afterAll(async () => {
  await store?.destroy();
  await stack?.stop();
});

const paymentRow = (hash: string) =>
  waitFor(
    async () =>
      (await store.selectFrom("payment").selectAll().where("transaction_hash", "=", hash).executeTakeFirst()) ?? undefined,
  );

describe("time and finality", () => {
  it("a transfer mined before the session existed does not pay it", async () => {
    const session = await createSession(stack);
    const paid = await stack.payUsdc({ from: 1, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    const block = await stack.publicClient.getBlock({ blockNumber: paid.blockNumber });
    expect(Number(block.timestamp) * 1000).toBeLessThan(Date.parse(session.expiresAt) - 30 * 60_000);
    await paymentRow(paid.hash);
    const response = await submitHash(stack, session.clientToken, paid.hash);
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ code: "predates_session", reason: "predates_session" });
    expect(await paymentRow(paid.hash)).toMatchObject({
      status: "unresolved",
      reason: "predates_session",
      session_id: session.id,
    });
    expect((await readSession(stack, session.id)).status).toBe("awaiting_payment");
  });

  it("a payment waits in payment_pending until its block has the confirmations the network needs", async () => {
    // Bring the chain clock to the wall clock.
    await stack.testClient.increaseTime({ seconds: DAY + 5 });
    await stack.testClient.mine({ blocks: 1 });
    const session = await createSession(stack, { certificate: { enabled: false } });
    const paid = await stack.payUsdc({ from: 2, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await paymentRow(paid.hash);
    const response = await submitHash(stack, session.clientToken, paid.hash);
    const body = await response.json();
    expect(body).toMatchObject({ status: "payment_pending", requiredConfirmations: 3, session: { status: "payment_pending" } });
    expect(body.confirmations).toBeLessThan(3);
    expect((await readSession(stack, session.id)).status).toBe("payment_pending");
    expect(
      (await outboxEvents(stack, store)).some(
        (event) => event.type === "purchase.settled" && event.data.orderId === session.orderId,
      ),
    ).toBe(false);

    await stack.testClient.mine({ blocks: 2 });
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined));
    const settled = (await outboxEvents(stack, store)).filter(
      (event) => event.type === "purchase.settled" && event.data.orderId === session.orderId,
    );
    expect(settled).toHaveLength(1);
    expect(settled[0]!.data.confirmations).toBeGreaterThanOrEqual(3);
  });

  it("an expired session is swept, tells the partner, refuses new details, and a new session for the order can be made", async () => {
    const session = await createSession(stack);
    // Five minutes is the shortest lifetime a partner can ask for; move this session's expiry instead of waiting.
    await store
      .updateTable("checkout_session")
      .set({ expires_at: Date.now() - 1 })
      .where("id", "=", session.id)
      .execute();
    await store
      .updateTable("client_token")
      .set({ expires_at: Date.now() - 1 })
      .where("session_id", "=", session.id)
      .execute();
    await waitFor(async () => ((await readSession(stack, session.id)).status === "expired" ? true : undefined));
    const expired = (await outboxEvents(stack, store)).filter(
      (event) => event.type === "session.expired" && event.data.sessionId === session.id,
    );
    expect(expired).toHaveLength(1);
    expect(expired[0]!.data).toMatchObject({ externalOrderId: session.externalOrderId, reason: "expired" });

    const details = await publicPost(stack, `/v1/public/checkout/sessions/${session.id}/details`, {
      clientToken: session.clientToken,
      contact: { email: "late@example.com" },
      delivery: { name: "A", line1: "B", city: "C", postalCode: "1", country: "PT" },
    });
    expect(details.status).toBe(410);
    expect((await details.json()).code).toBe("session_expired");

    const renewed = await createSession(stack, {
      externalOrderId: session.externalOrderId,
      idempotencyKey: `renew-${session.externalOrderId}`,
    });
    expect(renewed.status).toBe("awaiting_payment");
    expect(renewed.id).not.toBe(session.id);
    expect(renewed.orderId).toBe(session.orderId);
  });

  it("a payment mined after the session expired is late, and after the late window still late", async () => {
    const session = await createSession(stack, { expiresInSeconds: 300 });
    await stack.testClient.increaseTime({ seconds: 3_600 });
    const late = await stack.payUsdc({ from: 3, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await paymentRow(late.hash);
    const response = await submitHash(stack, session.clientToken, late.hash);
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ code: "late", reason: "late" });
    expect(await paymentRow(late.hash)).toMatchObject({ status: "unresolved", reason: "late", session_id: session.id });

    await stack.testClient.increaseTime({ seconds: 8 * DAY });
    const afterWindow = await stack.payUsdc({ from: 4, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    expect(await paymentRow(afterWindow.hash)).toMatchObject({ status: "unresolved", reason: "late", session_id: null });
    expect((await readSession(stack, session.id)).status).not.toBe("settled");
  });
});
