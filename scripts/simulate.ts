import { parseArgs } from "node:util";
import { SCENARIOS, SimulationRefused, simulate } from "../local/simulate.js";
import { isSubscriptionScenario, SUBSCRIPTION_SCENARIOS, simulateSubscription } from "../local/simulate-subscription.js";
import { localDataDir, readLocalJson } from "./local-json.js";

// `npm run simulate -- <scenario> [--session <id>] [--client-token <ct>] [--outage-seconds <s>]
// [--subscription <id>]`:
// drives the local chain (or `npm start`'s Anvil fork) so that the demo partner's
// receivers get the real events of a scenario (docs/testing.md, "Scenario triggers").
// The domain lives in local/simulate.ts and local/simulate-subscription.ts, which the tests
// call as this does.

const usage = `usage: npm run simulate -- <scenario> [--session <id>] [--client-token <ct_…>] [--outage-seconds <s>]
       npm run simulate -- ${SUBSCRIPTION_SCENARIOS.join(" | ")} [--subscription <sub_…>]

scenarios: ${SCENARIOS.join(", ")}
subscription scenarios: ${SUBSCRIPTION_SCENARIOS.join(", ")}
  --session <id>        use this session of the demo partner (default: create one)
  --client-token <ct>   the session's client token (relayed and reward act as the customer),
                        or the subscription's (st_…, after #st= in its link)
  --outage-seconds <s>  outage: how long the node stays stopped (default 10)
  --subscription <id>   renewal, renewal-failure: this subscription of the demo partner
                        (renewal needs one; renewal-failure creates one without it);
                        subscription: subscribe to this one (with --client-token st_…)
  --help                this text

Local chain and fork mode only; see docs/testing.md for each scenario's events.`;

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      session: { type: "string" },
      "client-token": { type: "string" },
      "outage-seconds": { type: "string" },
      subscription: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
}
try {
  parsed = parse();
} catch (error) {
  console.error(`${(error as Error).message}\n\n${usage}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const scenario = positionals[0];
const outage = values["outage-seconds"];
if (scenario === undefined || positionals.length > 1 || (outage !== undefined && !/^[1-9]\d{0,3}$/.test(outage))) {
  console.error(usage);
  process.exit(2);
}
try {
  if (isSubscriptionScenario(scenario)) {
    const result = await simulateSubscription({
      local: readLocalJson(),
      scenario,
      subscriptionId: values.subscription,
      clientToken: values["client-token"],
      log: (line) => console.log(`- ${line}`),
    });
    console.log(`\nsubscription ${result.subscriptionId} of customer wallet ${result.subscriber}`);
    if (result.customerUrl !== null) console.log(`the customer's page: ${result.customerUrl}`);
    console.log(`the partner receives for it: ${result.expected.join(", ")}`);
    console.log("recorded:");
    for (const event of result.events) {
      const detail = [
        typeof event.data.periodIndex === "number" ? `period ${event.data.periodIndex}` : undefined,
        typeof event.data.failureReason === "string" ? `reason ${event.data.failureReason}` : undefined,
        typeof event.data.orderId === "string" ? `order ${event.data.orderId}` : undefined,
      ].filter((part) => part !== undefined);
      console.log(`  ${event.id} ${event.type}${detail.length === 0 ? "" : ` (${detail.join(", ")})`}`);
    }
    if (result.scenario === "subscription") {
      console.log(`\nnext: npm run simulate -- renewal --subscription ${result.subscriptionId}`);
    }
    process.exit(0);
  }
  const result = await simulate({
    local: readLocalJson(),
    dataDir: localDataDir(),
    scenario,
    sessionId: values.session,
    clientToken: values["client-token"],
    outageMs: outage === undefined ? undefined : Number(outage) * 1000,
    log: (line) => console.log(`- ${line}`),
  });
  console.log(
    `\nthe partner receives for order ${result.orderId} (session ${result.sessionId}): ${result.expected.join(", ") || "no event"}`,
  );
  console.log("recorded:");
  for (const event of result.events) {
    const reason = typeof event.data.reason === "string" ? ` (reason ${event.data.reason})` : "";
    console.log(`  ${event.id} ${event.type}${reason}`);
  }
  if (result.events.length === 0) console.log("  nothing");
} catch (error) {
  if (!(error instanceof SimulationRefused)) throw error;
  console.error(`refused: ${error.message}`);
  process.exit(1);
}
