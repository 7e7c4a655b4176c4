import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Each record that moves money or rights has one module that owns its SQL
// (docs/architecture.md, "Conventions of the record modules"). A grep over the
// source, no service needed: any other module that names one of these tables in a
// query builder is reading or writing around its record.

const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Table → the one module that may query it. */
const OWNERS: Record<string, string> = {
  checkout_session: "api/checkout/session-record.ts",
  orders: "api/orders/order-record.ts",
  payment: "api/payments/payment-record.ts",
  rwa_purchase: "api/purchases/purchase-record.ts",
  certificate: "api/certificates/certificate-record.ts",
  webhook_delivery: "api/outbox/deliveries.ts",
  reward: "api/rewards/reward-record.ts",
  reward_settings: "api/rewards/reward-settings.ts",
  reward_funding_challenge: "api/rewards/funding-proof.ts",
  reward_unknown_claim: "api/rewards/unknown-claims.ts",
  // Refunds (docs/refunds.md)
  refund: "api/refunds/refund-record.ts",
  refund_allowance: "api/refunds/refund-record.ts",
  outgoing_transfer: "api/refunds/outgoing-transfer-record.ts",
  // Subscriptions (docs/subscriptions.md)
  subscription: "api/subscriptions/subscription-record.ts",
  subscription_charge: "api/subscriptions/charge-record.ts",
  subscription_settings: "api/subscriptions/subscription-settings.ts",
  // Closed periods of the books (docs/accounting.md)
  closed_period: "api/accounting/period-record.ts",
  closed_period_guard: "api/accounting/period-record.ts",
  period_adjustment: "api/accounting/period-record.ts",
};

/** A read may join another record's table when its rows are about its own record; writes stay with the owner. */
const WRITES = /\.(updateTable|insertInto|deleteFrom|replaceInto|mergeInto)\s*\(\s*["'`]([a-z_]+)/g;
const READS = /\.(selectFrom|innerJoin|leftJoin|rightJoin|fullJoin)\s*\(\s*["'`]([a-z_]+)/g;

function sources(dir: string): string[] {
  return readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts") && !name.includes("migrations"))
    .map((name) => join(dir, name));
}

/** `file:line: verb table` for every query of an owned table outside the modules allowed to run it. */
function findings(file: string, source: string): string[] {
  const found: string[] = [];
  const records = new Set(Object.values(OWNERS));
  source.split("\n").forEach((line, index) => {
    for (const match of line.matchAll(WRITES)) {
      const table = match[2] as string;
      if (OWNERS[table] !== undefined && OWNERS[table] !== file) found.push(`${file}:${index + 1}: ${match[1]} ${table}`);
    }
    for (const match of line.matchAll(READS)) {
      const table = match[2] as string;
      const owner = OWNERS[table];
      // A join about a record lives in that record's module: the owner, or another record module joining it in.
      const allowed = match[1] === "selectFrom" ? owner === file : records.has(file);
      if (owner !== undefined && !allowed) found.push(`${file}:${index + 1}: ${match[1]} ${table}`);
    }
  });
  return found;
}

describe("each money record owns its SQL", () => {
  it("recognises reads, joins and writes of an owned table, and nothing else", () => {
    expect(findings("api/x.ts", 'await trx.updateTable("checkout_session").set(row)')).toHaveLength(1);
    expect(findings("api/x.ts", 'store.selectFrom("payment as p").innerJoin("orders", "orders.id", "p.order_id")')).toHaveLength(
      2,
    );
    expect(findings("api/x.ts", 'trx.insertInto("event").values(row)')).toEqual([]);
    expect(
      findings("api/checkout/session-record.ts", 'trx.selectFrom("checkout_session").innerJoin("orders", "a", "b")'),
    ).toEqual([]);
    expect(findings("api/checkout/session-record.ts", 'trx.updateTable("orders").set(row)')).toHaveLength(1);
  });

  it("finds no query of a record's table outside its record module", () => {
    const files = [...sources("api"), ...sources("src")];
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap((file) => findings(file, readFileSync(join(PROJECT_ROOT, file), "utf8")));
    expect(found).toEqual([]);
  });
});
