import pg from "pg";
import { expect } from "vitest";
import { type PostgresServer, startPostgresServer } from "./support/postgres-server.js";
import { describeStoreOnPostgres } from "./support/store-on-postgres.js";
import { startTestStack } from "./support/test-stack.js";

// The scale-out shape: a PostgreSQL server holds the service's own state
// (STORE_URL) and, in a database of its own, Ponder's index (DATABASE_URL).
let server: PostgresServer;

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
    server = await startPostgresServer();
    await query(server.url, "create database settlement_index");
    const indexUrl = server.url.replace(/\/postgres$/, "/settlement_index");
    try {
      const stack = await startTestStack({ env: { STORE_URL: server.url, DATABASE_URL: indexUrl } });
      return {
        stack,
        async stop() {
          await stack.stop();
          await server.stop();
        },
      };
    } catch (error) {
      await server.stop();
      throw error;
    }
  },
  async storedWhereExpected() {
    const store = await query(server.url, "select count(*)::int as n from checkout_session");
    expect(store[0]!.n).toBeGreaterThanOrEqual(60);
    const indexUrl = server.url.replace(/\/postgres$/, "/settlement_index");
    const tables = await query(indexUrl, "select table_name from information_schema.tables where table_schema = 'public'");
    expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining(["usdc_transfer", "certificate_mint"]));
  },
});
