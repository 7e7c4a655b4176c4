import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaBehindViews } from "../api/config/startup.js";
import { createTestDatabase, type TestDatabase } from "./support/test-stack.js";

// A fleet's API replica reads the stable views schema (`ponder serve --schema settlement`) while
// the indexer records its start under the build schema behind it (docs/deploy.md): the replica
// finds that schema in Postgres's catalog, so it settles on the addresses the indexer watches.
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
  const client = new pg.Client(database.url);
  await client.connect();
  await client.query(`
    CREATE SCHEMA build_a; CREATE TABLE build_a.usdc_transfer (id int);
    CREATE SCHEMA build_b; CREATE TABLE build_b.usdc_transfer (id int);
    CREATE SCHEMA settlement; CREATE VIEW settlement.usdc_transfer AS SELECT * FROM build_a.usdc_transfer;`);
  await client.end();
});

afterAll(async () => {
  await database?.drop();
});

describe("the build schema behind a views schema", () => {
  it("names the schema the views select from, and follows a switch of the views", async () => {
    expect(await schemaBehindViews(database.url, "settlement")).toBe("build_a");
    const client = new pg.Client(database.url);
    await client.connect();
    await client.query("CREATE OR REPLACE VIEW settlement.usdc_transfer AS SELECT * FROM build_b.usdc_transfer");
    await client.end();
    expect(await schemaBehindViews(database.url, "settlement")).toBe("build_b");
  });

  it("answers the schema itself where it holds the tables, or does not exist yet", async () => {
    expect(await schemaBehindViews(database.url, "build_a")).toBe("build_a");
    expect(await schemaBehindViews(database.url, "not_created")).toBe("not_created");
  });
});
