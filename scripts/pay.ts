import { parseArgs } from "node:util";
import { partnerHeaders, readLocalJson } from "./local-json.js";

// `npm run pay -- <sessionId> [--amount <base units>] [--no-submit]`: pays a checkout
// session of the local stack from one of Anvil's funded accounts, as the hosted page's
// "Pay with a test account" does (local mode only). `--amount` sends another amount
// (a wrong-amount payment); `--no-submit` leaves the hash unsubmitted, so the
// settlement worker finds the payment on its own.

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { amount: { type: "string" }, "no-submit": { type: "boolean", default: false } },
});
const sessionId = positionals[0];
if (sessionId === undefined || (values.amount !== undefined && !/^[1-9]\d{0,17}$/.test(values.amount))) {
  console.error("usage: npm run pay -- <sessionId> [--amount <base units, e.g. 25000000>] [--no-submit]");
  process.exit(2);
}
const local = readLocalJson();
const response = await fetch(`${local.baseUrl}/v1/checkout/sessions/${encodeURIComponent(sessionId)}/test-payment`, {
  method: "POST",
  headers: partnerHeaders(local),
  body: JSON.stringify({ ...(values.amount === undefined ? {} : { amount: values.amount }), submit: !values["no-submit"] }),
});
const answer = (await response.json()) as Record<string, unknown>;
if (!response.ok) {
  console.error(`refused (${response.status}): ${answer.code}: ${answer.detail}`);
  process.exit(1);
}
console.log(`sent ${answer.amount} base units from ${answer.from}: ${answer.transactionHash}`);
const submission = answer.submission as { status?: string; problem?: { code: string; detail: string } } | null;
if (submission === null) console.log("hash not submitted: the settlement worker will find the payment");
else if (submission.problem) console.log(`submitted: ${submission.problem.code}: ${submission.problem.detail}`);
else console.log(`submitted: ${submission.status}`);
