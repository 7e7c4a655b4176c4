import pg from "pg";
import { expect, it } from "vitest";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { startPonder } from "../local/ponder-process.js";
import { findFreePort } from "../local/ports.js";
import { createSession } from "./support/checkout-helpers.js";
import { describeStoreOnPostgres } from "./support/store-on-postgres.js";
import { createTestDatabase, startTestStack, type TestDatabase, waitFor } from "./support/test-stack.js";

// The scale-out shape: a PostgreSQL server holds the service's own state
// (STORE_URL) and, in a database of its own, Ponder's index (DATABASE_URL).
let storeDatabase: TestDatabase;
let indexDatabase: TestDatabase;

async function query(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

describeStoreOnPostgres("store and index on a PostgreSQL server (STORE_URL, DATABASE_URL)", {
  async start() {
    storeDatabase = await createTestDatabase();
    indexDatabase = await createTestDatabase();
    const drop = async () => {
      await storeDatabase.drop();
      await indexDatabase.drop();
    };
    try {
      const stack = await startTestStack({ env: { STORE_URL: storeDatabase.url, DATABASE_URL: indexDatabase.url } });
      return {
        stack,
        async stop() {
          await stack.stop();
          await drop();
        },
      };
    } catch (error) {
      await drop();
      throw error;
    }
  },
  async storedWhereExpected() {
    const store = await query(storeDatabase.url, "select count(*)::int as n from checkout_session");
    expect(store[0]!.n).toBeGreaterThanOrEqual(60);
    const tables = await query(
      indexDatabase.url,
      "select table_name from information_schema.tables where table_schema = 'public'",
    );
    expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining(["usdc_transfer", "certificate_mint"]));
  },
  moreTests(current) {
    it("runs an API replica (ponder serve) beside it: both answer, and their racing workers settle and deliver each payment once", async () => {
      const { stack, receiver } = current();
      const replica = await startPonder({
        root: PROJECT_ROOT,
        command: "serve",
        port: await findFreePort(),
        env: stack.serviceEnv,
      });
      try {
        const sessions = await Promise.all(
          Array.from({ length: 12 }, () => createSession(stack, { certificate: { enabled: false } })),
        );
        for (const [index, session] of sessions.entries()) {
          await stack.payUsdc({ from: 4 + (index % 3), to: session.payment.recipient, amount: BigInt(session.payment.amount) });
        }
        // Nobody submits a hash: the settlement workers of both processes find the payments in the index.
        await waitFor(
          async () => {
            const beats = await query(storeDatabase.url, "select id from worker_heartbeat where worker = 'settlement'");
            return beats.length === 2 ? true : undefined;
          },
          { what: "a settlement worker beating in each process" },
        );
        const statusAt = async (baseUrl: string, id: string) => {
          const response = await fetch(`${baseUrl}/v1/checkout/sessions/${id}`, {
            headers: { Authorization: `Bearer ${stack.local.partner.apiKey}` },
          });
          return ((await response.json()) as { status: string }).status;
        };
        await waitFor(
          async () => {
            const statuses = await Promise.all(sessions.map((session) => statusAt(replica.baseUrl, session.id)));
            return statuses.every((status) => status === "settled") ? true : undefined;
          },
          { timeoutMs: 30_000, what: "every session settled, as the replica sees it" },
        );
        for (const session of sessions) expect(await statusAt(stack.ponder.baseUrl, session.id)).toBe("settled");

        const settledHooks = (orderId: string) =>
          receiver.acknowledged.filter(
            (hook) => hook.type === "purchase.settled" && JSON.parse(hook.rawBody.toString()).data.orderId === orderId,
          );
        await waitFor(async () => (sessions.every((session) => settledHooks(session.orderId).length > 0) ? true : undefined), {
          what: "purchase.settled delivered for every order",
        });
        // Give a second delivery, if the two dispatchers were to race, time to arrive.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        for (const session of sessions) expect(settledHooks(session.orderId)).toHaveLength(1);
        // And one event each in the outbox: both settlement workers raced for every payment.
        const events = await query(storeDatabase.url, "select payload from event where type = 'purchase.settled'");
        const orderIds = events.map((row) => JSON.parse(String(row.payload)).data.orderId as string);
        for (const session of sessions) expect(orderIds.filter((id) => id === session.orderId)).toHaveLength(1);
      } finally {
        await replica.stop();
      }
    });
  },
});
