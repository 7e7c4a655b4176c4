import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SIGNATURE_HEADER, signPayload } from "../client/src/signature.js";
import { localDataDir, partnerHeaders, readLocalJson } from "./local-json.js";

// `npm run events:listen -- --forward-to <url>`: follows the local stack's
// `GET /v1/events` and forwards each new event, byte for byte and signed with a
// signing secret (the same `Service-Signature` scheme as webhooks), to a receiver on
// this machine; what `stripe listen` does. Ctrl-C stops it. The secret is kept in
// `<DATA_DIR>/events-listen-secret` so a receiver configured with it keeps working
// across restarts. Options: `--help` (docs/testing.md, "Forwarding events").

const USAGE = `usage: npm run events:listen -- --forward-to <url> [options]

Follows the local stack's GET /v1/events and forwards each new event to <url>,
signed as a webhook is (Service-Signature header; verify with constructEvent).

options:
  --forward-to <url>   where to POST each event (http:// or https://), required
  --from-start         forward every event recorded so far first, then new ones
  --interval <ms>      how often to ask for new events (default 1000)
  --print-secret       print the signing secret and exit
  --new-secret         replace the kept signing secret with a new one
  --help               this text

The signing secret is kept in <DATA_DIR>/events-listen-secret (DATA_DIR defaults to
.data), created on first use; LISTEN_SECRET in the environment overrides it.`;

let values: {
  "forward-to"?: string;
  "from-start": boolean;
  interval: string;
  help: boolean;
  "print-secret": boolean;
  "new-secret": boolean;
};
try {
  ({ values } = parseArgs({
    options: {
      "forward-to": { type: "string" },
      "from-start": { type: "boolean", default: false },
      interval: { type: "string", default: "1000" },
      help: { type: "boolean", short: "h", default: false },
      "print-secret": { type: "boolean", default: false },
      "new-secret": { type: "boolean", default: false },
    },
  }));
} catch (error) {
  console.error(`${(error as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

/** The kept secret (created once, mode 0600), unless LISTEN_SECRET names one. */
function signingSecret(): string {
  if (process.env.LISTEN_SECRET) return process.env.LISTEN_SECRET;
  const path = join(localDataDir(), "events-listen-secret");
  if (!values["new-secret"] && existsSync(path)) {
    const kept = readFileSync(path, "utf8").trim();
    if (/^whsec_[0-9a-f]{48}$/.test(kept)) return kept;
  }
  const created = `whsec_${randomBytes(24).toString("hex")}`;
  mkdirSync(localDataDir(), { recursive: true });
  writeFileSync(path, `${created}\n`, { mode: 0o600 });
  return created;
}

const secret = signingSecret();
if (values["print-secret"]) {
  console.log(secret);
  process.exit(0);
}
const target = values["forward-to"];
const interval = Number(values.interval);
if (target === undefined || !/^https?:\/\//.test(target) || !Number.isInteger(interval) || interval < 100) {
  console.error(USAGE);
  process.exit(2);
}
const local = readLocalJson();
console.log(`forwarding events of ${local.partner.id} to ${target}`);
console.log(`signing secret (verify with constructEvent; kept in ${join(localDataDir(), "events-listen-secret")}): ${secret}`);

type Page = { data: { id: string; type: string }[]; nextCursor: string | null };
const list = async (after: string | undefined): Promise<{ page: Page }> => {
  const query = new URLSearchParams({ limit: "100", ...(after === undefined ? {} : { after }) });
  const response = await fetch(`${local.baseUrl}/v1/events?${query}`, { headers: partnerHeaders(local) });
  if (!response.ok) throw new Error(`GET /v1/events answered ${response.status}`);
  return { page: (await response.json()) as Page };
};

// Start after the newest event unless asked to replay everything.
let after: string | undefined;
if (!values["from-start"]) {
  for (;;) {
    const { page } = await list(after);
    if (page.data.length > 0) after = page.data.at(-1)!.id;
    if (page.nextCursor === null) break;
  }
}

let stopping = false;
process.on("SIGINT", () => {
  stopping = true;
});
while (!stopping) {
  try {
    const { page } = await list(after);
    for (const event of page.data) {
      // The event's exact body, as a webhook carries it.
      const body = await (await fetch(`${local.baseUrl}/v1/events/${event.id}`, { headers: partnerHeaders(local) })).text();
      const response = await fetch(target, {
        method: "POST",
        headers: { "Content-Type": "application/json", [SIGNATURE_HEADER]: signPayload({ payload: body, secrets: [secret] }) },
        body,
      }).catch((error: unknown) => ({ status: `failed: ${String(error)}` }));
      console.log(`${new Date().toISOString()} ${event.type} ${event.id} -> ${response.status}`);
      after = event.id;
    }
    if (page.nextCursor !== null) continue;
  } catch (error) {
    console.error(String(error));
  }
  await new Promise((resolve) => setTimeout(resolve, interval));
}
