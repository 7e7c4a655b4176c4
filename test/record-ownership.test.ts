import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Who may query a table (docs/architecture.md, "Conventions of the record modules"). The rule,
// for every table of the store (every table of `Database`, api/store/*-tables.ts):
//
//   1. The table has ONE owning module, listed in OWNERS below; a new table fails this test
//      until it is given one.
//   2. Only the owner writes it (`insertInto`, `updateTable`, `deleteFrom`).
//   3. Only the owner reads it (`selectFrom`, any join). Every other module, in api/, src/,
//      cli/ and local/ alike, calls the owner's exported functions.
//   4. The exceptions: a record module whose rows are about its own record may join (or read)
//      a neighbour's table in the same query (a payment with its session's order); and a module
//      whose folder the owner's folder imports, so that calling the owner would close an import
//      circle (docs/architecture.md, "how money moves through the folders"). Such a reader is
//      listed in READERS beside the table, with why; nothing else goes there.
//
// A grep over the source, no service needed.

const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Table → the one module that owns its SQL. */
const OWNERS: Record<string, string> = {
  // Checkout (docs/architecture.md)
  checkout_session: "api/checkout/session-record.ts",
  client_token: "api/checkout/client-tokens.ts",
  idempotency_record: "api/checkout/idempotency.ts",
  amount_reservation: "api/checkout/amount-reference.ts",
  session_presentation: "api/checkout/hosted-options.ts",
  orders: "api/orders/order-record.ts",
  payment: "api/payments/payment-record.ts",
  worker_cursor: "api/settlement/settlement-worker.ts",
  // Partners
  partner: "api/partners/api-keys.ts",
  api_key: "api/partners/api-keys.ts",
  auditor_key: "api/partners/api-keys.ts",
  payment_address: "api/partners/payment-addresses.ts",
  partner_branding: "api/partners/branding.ts",
  partner_member: "api/partners/members.ts",
  // Outbox
  event: "api/outbox/record-event.ts",
  webhook_endpoint: "api/outbox/webhook-endpoints.ts",
  webhook_delivery: "api/outbox/deliveries.ts",
  webhook_delivery_attempt: "api/outbox/deliveries.ts",
  // RWA portals
  rwa_purchase: "api/purchases/purchase-record.ts",
  offering_position: "api/purchases/reservations.ts",
  offering: "api/offerings/offerings.ts",
  issuer: "api/compliance/issuers.ts",
  investor_eligibility: "api/compliance/eligibility.ts",
  certificate: "api/certificates/certificate-record.ts",
  audit_log: "api/audit/audit-log.ts",
  portal_challenge: "api/sign-in/siwe-challenge.ts",
  portal_session: "api/sign-in/portal-sessions.ts",
  // Gasless relaying
  relayed_authorization: "api/gasless/relayed-authorization-record.ts",
  relayer_charge: "api/gasless/relay-charges.ts",
  relayer_lease: "api/gasless/relayer.ts",
  // Rewards
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
  // The books (docs/accounting.md)
  closed_period: "api/accounting/period-record.ts",
  closed_period_guard: "api/accounting/period-record.ts",
  period_adjustment: "api/accounting/period-record.ts",
  opening_balance: "api/accounting/opening-balances.ts",
  reconciliation_check: "api/accounting/reconciliation-checks.ts",
  // The service itself
  indexer_start: "api/config/startup.ts",
  worker_heartbeat: "api/workers/run-worker.ts",
};

/** Why the session record reads its neighbours: the hot paths answer from one query (docs/architecture.md, "The hot paths"). */
const SURROUNDINGS =
  "the session with its surroundings in one query (sessionWithSurroundings: the status poll, hash submission, the partner's look-up)";

/** Table → record modules that join it into a query about their own record (rule 4), and why. */
const READERS: Record<string, Record<string, string>> = {
  checkout_session: {
    "api/payments/payment-record.ts": "a payment with its session (and its order): the reorg watch, the list, the accounting",
    "api/purchases/purchase-record.ts": "a purchase with its session's status: unpaid holds, release candidates",
    "api/outbox/record-event.ts":
      "an event about an order carries its session's metadata (sessionMetadata): api/checkout imports api/outbox (session.expired)",
  },
  orders: {
    "api/payments/payment-record.ts": "a payment with its session's order (reorgedPayments)",
    "api/checkout/session-record.ts": `its order: ${SURROUNDINGS}`,
  },
  client_token: {
    "api/checkout/session-record.ts":
      "the session a client token opens (sessionOfClientToken, and the token's admission read with the surroundings)",
  },
  payment: { "api/checkout/session-record.ts": `the payment paying it and the latest unresolved one: ${SURROUNDINGS}` },
  certificate: { "api/checkout/session-record.ts": `its order's certificate: ${SURROUNDINGS}` },
  session_presentation: { "api/checkout/session-record.ts": `its hosted options: ${SURROUNDINGS}` },
  partner: {
    "api/checkout/session-record.ts": `its partner's name, the page's fallback title: ${SURROUNDINGS}`,
    "api/partners/members.ts": "a wallet's memberships with their partner's name in one query (membershipsOf)",
  },
  partner_branding: { "api/checkout/session-record.ts": `its partner's branding (no logo bytes): ${SURROUNDINGS}` },
  relayed_authorization: { "api/checkout/session-record.ts": `its latest relayed authorization: ${SURROUNDINGS}` },
  reward: { "api/checkout/session-record.ts": `its order's rewards: ${SURROUNDINGS}` },
  offering: { "api/purchases/purchase-record.ts": "purchases with their offering: holder register, sold-out totals" },
  issuer: {
    "api/purchases/purchase-record.ts": "purchases with their offering's issuer: an issuer's holder register",
    "api/offerings/offerings.ts": "offerings with their issuer's name in one query (listOfferings: the portals' lists)",
    "api/partners/partner-admin.ts":
      "whether a partner is an issuer (the admin's partner detail): api/compliance imports api/partners (an issuer is a partner)",
  },
  payment_address: {
    "api/config/startup.ts":
      "the indexer's start adds the store's payment addresses to what it watches: api/partners imports api/config, below it",
  },
  investor_eligibility: { "api/purchases/purchase-record.ts": "purchases with their investor's eligibility: unverified units" },
  event: {
    "api/outbox/deliveries.ts":
      "a delivery with the event it carries (claiming, the partner's list, a redelivery); record-event.ts imports deliveries.ts to fan out",
  },
  webhook_endpoint: { "api/outbox/deliveries.ts": "a delivery with its endpoint's URL and secret (claiming, the list)" },
};

const WRITES = /\.(updateTable|insertInto|deleteFrom|replaceInto|mergeInto)\s*\(\s*["'`]([a-z_]+)/g;
const READS = /\.(selectFrom|innerJoin|leftJoin|rightJoin|fullJoin)\s*\(\s*["'`]([a-z_]+)/g;

/** Every table of `Database`: the members of the interfaces in api/store that list tables. */
function storeTables(): string[] {
  const dir = join(PROJECT_ROOT, "api", "store");
  const tables: string[] = [];
  for (const name of readdirSync(dir).filter((file) => file.endsWith(".ts"))) {
    const source = readFileSync(join(dir, name), "utf8");
    for (const block of source.matchAll(/export interface (?:Database|\w+Tables)\b[^{]*\{([^}]*)\}/g)) {
      for (const member of (block[1] as string).matchAll(/^\s+([a-z_]+): \w+;/gm)) tables.push(member[1] as string);
    }
  }
  return tables.sort();
}

function sources(dir: string): string[] {
  return readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => /\.tsx?$/.test(name) && !name.includes("migrations"))
    .map((name) => join(dir, name));
}

/** `file table` for every read, and `file:line: verb table` for every write, outside what the rule allows. */
function findings(file: string, source: string): { writes: string[]; reads: string[] } {
  const writes: string[] = [];
  const reads = new Set<string>();
  source.split("\n").forEach((line, index) => {
    for (const match of line.matchAll(WRITES)) {
      const table = match[2] as string;
      if (OWNERS[table] !== file) writes.push(`${file}:${index + 1}: ${match[1]} ${table}`);
    }
    for (const match of line.matchAll(READS)) {
      const table = match[2] as string;
      if (OWNERS[table] !== file && READERS[table]?.[file] === undefined) reads.add(`${file} ${table}`);
    }
  });
  return { writes, reads: [...reads] };
}

describe("each table's SQL lives in its one owning module", () => {
  it("recognises reads, joins and writes outside the owner, and nothing else", () => {
    expect(findings("api/x.ts", 'await trx.updateTable("checkout_session").set(row)').writes).toHaveLength(1);
    expect(findings("api/x.ts", 'store.selectFrom("payment as p").innerJoin("orders", "orders.id", "p.order_id")').reads).toEqual(
      ["api/x.ts payment", "api/x.ts orders"],
    );
    expect(findings("api/outbox/record-event.ts", 'trx.insertInto("event").values(row)')).toEqual({ writes: [], reads: [] });
    expect(findings("api/payments/payment-record.ts", 'db.selectFrom("payment").innerJoin("orders", "a", "b")').reads).toEqual(
      [],
    );
    expect(findings("api/payments/payment-record.ts", 'trx.updateTable("orders").set(row)').writes).toHaveLength(1);
    expect(findings("cli/x.ts", 'db.selectFrom("partner").selectAll()').reads).toEqual(["cli/x.ts partner"]);
  });

  it("gives every table of the store one owner, and names no table the store lacks", () => {
    const tables = storeTables();
    expect(tables.length).toBeGreaterThan(40);
    expect(Object.keys(OWNERS).sort()).toEqual(tables);
    for (const [table, readers] of Object.entries(READERS)) {
      expect(tables, table).toContain(table);
      for (const reader of Object.keys(readers)) expect(reader, `${table} reader`).not.toBe(OWNERS[table]);
    }
  });

  it("finds no write outside the owner, and no read outside the owner and its listed readers (api, src, cli, local)", () => {
    const files = [...sources("api"), ...sources("src"), ...sources("cli"), ...sources("local")];
    expect(files.length).toBeGreaterThan(50);
    const all = files.map((file) => findings(file, readFileSync(join(PROJECT_ROOT, file), "utf8")));
    expect(all.flatMap((found) => found.writes)).toEqual([]);
    const reads = all.flatMap((found) => found.reads);
    expect(reads).toEqual([]);
  });
});
