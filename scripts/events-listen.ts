import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { SIGNATURE_HEADER, signPayload } from "../client/src/signature.js";
import { partnerHeaders, readLocalJson } from "./local-json.js";

// `npm run events:listen -- --forward-to <url>`: follows the local stack's
// `GET /v1/events` and forwards each new event, byte for byte and signed with a
// secret printed at start (the same `Service-Signature` scheme as webhooks), to a
// receiver on this machine; what `stripe listen` does. Ctrl-C stops it.

const { values } = parseArgs({
  options: {
    "forward-to": { type: "string" },
    "from-start": { type: "boolean", default: false },
    interval: { type: "string", default: "1000" },
  },
});
const target = values["forward-to"];
if (target === undefined || !/^https?:\/\//.test(target)) {
  console.error("usage: npm run events:listen -- --forward-to http://127.0.0.1:3000/webhooks [--from-start]");
  process.exit(2);
}
const local = readLocalJson();
const secret = process.env.LISTEN_SECRET ?? `whsec_${randomBytes(24).toString("hex")}`;
console.log(`forwarding events of ${local.partner.id} to ${target}`);
console.log(`signing secret (verify with constructEvent): ${secret}`);

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
  await new Promise((resolve) => setTimeout(resolve, Number(values.interval)));
}
