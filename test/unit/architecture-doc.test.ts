import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { certificateTransitions } from "../../api/certificates/certificate-record.js";
import { sessionTransitions } from "../../api/checkout/session-record.js";
import { relayTransitions } from "../../api/gasless/relayed-authorization-record.js";
import { orderTransitions } from "../../api/orders/order-record.js";
import { deliveryTransitions } from "../../api/outbox/deliveries.js";
import { paymentTransitions } from "../../api/payments/payment-record.js";
import { purchaseTransitions } from "../../api/purchases/purchase-record.js";
import { outgoingTransferTransitions } from "../../api/refunds/outgoing-transfer-record.js";
import { refundTransitions } from "../../api/refunds/refund-record.js";
import { rewardTransitions } from "../../api/rewards/reward-record.js";
import { chargeTransitions } from "../../api/subscriptions/charge-record.js";
import { subscriptionTransitions } from "../../api/subscriptions/subscription-record.js";

// docs/architecture.md prints each record's transition table for the reader; the
// code's tables are the truth. Every transition, its from-states and its to-state in
// the page must be the code's, so the page cannot drift from what the records do.

type Table = Record<string, { readonly from: readonly string[]; readonly to: string }>;

const RECORDS: { heading: string; table: Table }[] = [
  { heading: "## Checkout session (`api/checkout/session-record.ts`)", table: sessionTransitions },
  { heading: "## Payment (`api/payments/payment-record.ts`)", table: paymentTransitions },
  { heading: "## Order (`api/orders/order-record.ts`)", table: orderTransitions },
  { heading: "## RWA purchase (`api/purchases/purchase-record.ts`)", table: purchaseTransitions },
  { heading: "### Certificate (`api/certificates/certificate-record.ts`)", table: certificateTransitions },
  { heading: "### Webhook delivery (`api/outbox/deliveries.ts`)", table: deliveryTransitions },
  { heading: "### Reward (`api/rewards/reward-record.ts`)", table: rewardTransitions },
  { heading: "### Relayed authorization (`api/gasless/relayed-authorization-record.ts`)", table: relayTransitions },
  { heading: "### Subscription (`api/subscriptions/subscription-record.ts`)", table: subscriptionTransitions },
  { heading: "### Subscription charge (`api/subscriptions/charge-record.ts`)", table: chargeTransitions },
  { heading: "### Refund (`api/refunds/refund-record.ts`)", table: refundTransitions },
  { heading: "### Outgoing transfer (`api/refunds/outgoing-transfer-record.ts`)", table: outgoingTransferTransitions },
];

const page = readFileSync(join(import.meta.dirname, "..", "..", "docs", "architecture.md"), "utf8");

/** The first `| transition | from | to | guard |` table after `heading`, as transition → { from, to }. */
function printedTable(heading: string, text = page): Record<string, { from: string[]; to: string }> {
  const start = text.indexOf(`${heading}\n`);
  if (start === -1) throw new Error(`docs/architecture.md has no section "${heading}"`);
  const lines = text.slice(start).split("\n");
  const header = lines.findIndex((line) => /^\|\s*transition\s*\|\s*from\s*\|\s*to\s*\|/.test(line));
  if (header === -1) throw new Error(`"${heading}" prints no transition table`);
  const rows: Record<string, { from: string[]; to: string }> = {};
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    const [name, from, to] = line
      .split("|")
      .slice(1, 4)
      .map((cell) => cell.trim());
    const names = (cell: string | undefined) => [...(cell ?? "").matchAll(/`([a-z_A-Z]+)`/g)].map((match) => match[1] as string);
    rows[names(name)[0] ?? ""] = { from: names(from).sort(), to: names(to)[0] ?? "" };
  }
  return rows;
}

describe("docs/architecture.md prints each record's transitions as the code declares them", () => {
  for (const { heading, table } of RECORDS) {
    it(heading.replace(/^#+ /, ""), () => {
      const declared = Object.fromEntries(
        Object.entries(table).map(([name, rule]) => [name, { from: [...rule.from].sort(), to: rule.to }]),
      );
      expect(printedTable(heading)).toEqual(declared);
    });
  }

  it("notices a row left out or a state misprinted", () => {
    const heading = "## Order (`api/orders/order-record.ts`)";
    expect(Object.keys(printedTable(heading))).toEqual(["credit", "fulfil"]);
    const withoutFulfil = page.replace(/^\| `fulfil`.*\n/m, "");
    expect(Object.keys(printedTable(heading, withoutFulfil))).toEqual(["credit"]);
    const misprinted = page.replace(/^(\| `credit`\s*\| `awaiting_payment` \| )`paid`/m, "$1`fulfilled`");
    expect(printedTable(heading, misprinted).credit?.to).toBe("fulfilled");
  });
});
