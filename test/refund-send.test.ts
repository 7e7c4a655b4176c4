import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession, readSession } from "./support/checkout-helpers.js";
import { startTestStack, type TestStack, waitFor } from "./support/test-stack.js";

// Local mode's "Send with the test account" for refunds (issue 26): `npm run refund --
// <refundId>` sends the refund's exact `instructions.transaction` from its payment
// address (a key of the local stack's secrets) on a real Anvil, and the service proves
// the refund from the index until it is `succeeded`.

const run = promisify(execFile);
let stack: TestStack;

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
type Json = Record<string, any>;

async function partner(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Json> {
  const response = await stack.partnerFetch(path, init);
  const body = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

const refundScript = (refundId: string) =>
  run("npx", ["tsx", "scripts/refund.ts", refundId], { env: { ...process.env, DATA_DIR: stack.dataDir }, timeout: 60_000 }).then(
    (done) => ({ code: 0, stdout: done.stdout, stderr: done.stderr }),
    (failed: { code?: number; stdout?: string; stderr?: string }) => ({
      code: failed.code ?? 1,
      stdout: failed.stdout ?? "",
      stderr: failed.stderr ?? "",
    }),
  );

beforeAll(async () => {
  stack = await startTestStack();
}, 420_000);

afterAll(async () => {
  await stack?.stop();
});

describe("npm run refund (local mode)", () => {
  it("sends a ready refund from its payment address and the refund succeeds; a refund not ready is refused, nothing sent", async () => {
    const session = await createSession(stack, { totalPriceUsdc: "12000000", certificate: { enabled: false } });
    await stack.payUsdc({ from: 2, to: session.payment.recipient, amount: BigInt(session.payment.amount) });
    await waitFor(async () => ((await readSession(stack, session.id)).status === "settled" ? true : undefined), {
      what: `session ${session.id} settled`,
    });
    const payer = stack.local.accounts[2]!.address;

    // Awaiting the customer's address: nothing to send yet.
    const asking = await partner("/v1/refunds", {
      method: "POST",
      json: { orderId: session.orderId, amount: "1000000", reason: "requested_by_customer", idempotencyKey: `s-${randomUUID()}` },
    });
    const refused = await refundScript(asking.id);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toContain("is awaiting_destination");
    await partner(`/v1/refunds/${asking.id}/cancel`, { method: "POST", json: {} });

    const ready = await partner("/v1/refunds", {
      method: "POST",
      json: {
        orderId: session.orderId,
        amount: "4000000",
        reason: "requested_by_customer",
        destination: "payer",
        idempotencyKey: `s-${randomUUID()}`,
      },
    });
    expect(ready).toMatchObject({ status: "ready", destination: payer });
    const sent = await run("npx", ["tsx", "scripts/refund.ts", ready.id], {
      env: { ...process.env, DATA_DIR: stack.dataDir },
      timeout: 60_000,
    });
    const hash = /: (0x[0-9a-f]{64})$/m.exec(sent.stdout)?.[1];
    expect(hash, sent.stdout + sent.stderr).toBeDefined();
    await stack.testClient.mine({ blocks: 1 });
    const succeeded = await waitFor(
      async () => {
        const read = await partner(`/v1/refunds/${ready.id}`);
        return read.status === "succeeded" ? read : undefined;
      },
      { what: `refund ${ready.id} succeeded`, timeoutMs: 30_000 },
    );
    expect(succeeded).toMatchObject({ transactionHash: hash, destination: payer, amount: "4000000" });

    // Sent once: a second run is refused (the refund is no longer ready).
    const again = await refundScript(ready.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is succeeded");
  });
});
