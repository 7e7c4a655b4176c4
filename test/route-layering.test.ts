import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// Routes read input, call one domain function and shape output: no SQL in a route
// file (docs/architecture.md, "Routes"). A grep over the source, no service needed.

const ROUTE_FOLDERS = ["api/routes", "api/routes/portals"];

/** What a query in a route file would look like: Kysely imported, raw `sql`, a query builder or a transaction. */
const SQL_IN_ROUTE: { name: string; pattern: RegExp }[] = [
  { name: "imports kysely", pattern: /from\s+["']kysely["']/ },
  { name: "raw sql template", pattern: /\bsql\s*(<[^>]*>)?\s*`/ },
  { name: "query builder", pattern: /\.(selectFrom|updateTable|insertInto|deleteFrom|replaceInto|mergeInto)\s*\(/ },
  { name: "transaction", pattern: /\.transaction\s*\(\s*\)/ },
  { name: "query execution", pattern: /\.(executeTakeFirst|executeTakeFirstOrThrow)\s*\(/ },
];

function routeFiles(): string[] {
  return ROUTE_FOLDERS.flatMap((folder) =>
    readdirSync(folder)
      .filter((name) => name.endsWith(".ts"))
      .map((name) => join(folder, name)),
  );
}

function sqlFindings(source: string): string[] {
  const findings: string[] = [];
  source.split("\n").forEach((line, index) => {
    for (const { name, pattern } of SQL_IN_ROUTE) if (pattern.test(line)) findings.push(`${index + 1}: ${name}: ${line.trim()}`);
  });
  return findings;
}

describe("route files hold no SQL", () => {
  it("recognises each form a query takes", () => {
    expect(sqlFindings('import { sql } from "kysely";')).toHaveLength(1);
    expect(sqlFindings("await sql`select 1`.execute(store);")).toHaveLength(1);
    expect(sqlFindings("const n = sql<number>`1`;")).toHaveLength(1);
    expect(sqlFindings('const row = await context.store.selectFrom("orders").selectAll().executeTakeFirst();')).toHaveLength(2);
    expect(sqlFindings('  .updateTable("checkout_session")')).toHaveLength(1);
    expect(sqlFindings('await trx.insertInto("event").values(row)')).toHaveLength(1);
    expect(sqlFindings("await store.transaction().execute(async (trx) => {")).toHaveLength(1);
    expect(sqlFindings("const page = await listPayments(context.store, query);")).toEqual([]);
  });

  it("finds none in api/routes or api/routes/portals", () => {
    const files = routeFiles();
    expect(files.length).toBeGreaterThan(20);
    const findings = files.flatMap((file) => sqlFindings(readFileSync(file, "utf8")).map((finding) => `${file}:${finding}`));
    expect(findings).toEqual([]);
  });
});
