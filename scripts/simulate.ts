import { parseArgs } from "node:util";
import { SCENARIOS, SimulationRefused, simulate } from "../local/simulate.js";
import { localDataDir, readLocalJson } from "./local-json.js";

// `npm run simulate -- <scenario> [--session <id>] [--client-token <ct>] [--outage-seconds <s>]`:
// drives the local chain (or `npm start`'s Anvil fork) so that the demo partner's
// receivers get the real events of a scenario (docs/testing.md, "Scenario triggers").
// The domain lives in local/simulate.ts, which the tests call as this does.

const usage = `usage: npm run simulate -- <scenario> [--session <id>] [--client-token <ct_…>] [--outage-seconds <s>]

scenarios: ${SCENARIOS.join(", ")}
  --session <id>        use this session of the demo partner (default: create one)
  --client-token <ct>   the session's client token (relayed and reward act as the customer)
  --outage-seconds <s>  outage: how long the node stays stopped (default 10)
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
