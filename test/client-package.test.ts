import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR } from "../api/audit/audit-log.js";
import { createPartnerWithKey } from "../api/partners/partner-admin.js";
import { PROJECT_ROOT } from "../local/local-stack.js";
import { CLIENT_TYPES_PATH, renderClientTypes, staleClientTypes } from "../scripts/client-types.js";
import { createAppWithoutChain } from "../scripts/openapi-document.js";
import { closeServer } from "./support/close-server.js";

// The partner client library as a partner gets it: `npm pack` in client/, installed
// offline into an empty project outside the repository, imported by a plain Node
// process that talks to a real HTTP server of the service and verifies what the
// service signs. Plus the check that its generated types match the served document.

const run = promisify(execFile);
const CLIENT_DIR = join(PROJECT_ROOT, "client");

let service: Awaited<ReturnType<typeof createAppWithoutChain>>;
let server: ReturnType<typeof serve>;
let baseUrl: string;
let apiKey: string;
let work: string;
let tarball: string;
let project: string;
let packedFiles: string[];

beforeAll(async () => {
  service = await createAppWithoutChain();
  ({
    key: { apiKey },
  } = await createPartnerWithKey(service.context.store, OPERATOR, { name: "Package test shop", mode: "test" }));
  server = serve({ fetch: service.app.fetch, hostname: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  work = mkdtempSync(join(tmpdir(), "client-package-"));
  // `prepack` builds dist/ from client/src with client/tsconfig.json.
  const packed = await run("npm", ["pack", "--json", "--pack-destination", work], { cwd: CLIENT_DIR });
  const [manifest] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as {
    filename: string;
    files: { path: string }[];
  }[];
  if (manifest === undefined) throw new Error(`npm pack printed no manifest: ${packed.stdout}`);
  tarball = join(work, manifest.filename);
  packedFiles = manifest.files.map((file) => file.path);

  project = join(work, "partner-shop");
  await run("mkdir", [project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "partner-shop", private: true, type: "module" }));
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: project });
}, 240_000);

afterAll(async () => {
  await closeServer(server);
  await service?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("the generated types", () => {
  it("are what the served OpenAPI document generates", async () => {
    const served = await (await fetch(`${baseUrl}/openapi.json`)).json();
    const generated = await renderClientTypes(served);
    const committed = readFileSync(CLIENT_TYPES_PATH, "utf8");
    const stale = staleClientTypes(committed, generated);
    if (stale !== undefined) throw new Error(stale);
    expect(committed).toContain("export interface paths");
  });
});

describe("the packed client library", () => {
  it("holds built JavaScript and declarations only, and depends on nothing", async () => {
    expect(packedFiles).toContain("dist/index.js");
    expect(packedFiles).toContain("dist/index.d.ts");
    expect(packedFiles).toContain("dist/generated/openapi.d.ts");
    expect(packedFiles.filter((path) => !/^(dist\/.+\.(js|d\.ts)|package\.json|README\.md)$/.test(path))).toEqual([]);
    const installed = JSON.parse(
      readFileSync(join(project, "node_modules", "@usdc-settlement", "client", "package.json"), "utf8"),
    ) as Record<string, unknown>;
    expect(installed.dependencies).toBeUndefined();
    expect(installed.peerDependencies).toBeUndefined();
    // Nothing in the built code reaches outside the package.
    for (const path of packedFiles.filter((file) => file.endsWith(".js"))) {
      const code = readFileSync(join(project, "node_modules", "@usdc-settlement", "client", path), "utf8");
      const specifiers = [...code.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((match) => match[1] as string);
      expect(
        specifiers.filter((specifier) => !specifier.startsWith("./") && !specifier.startsWith("node:")),
        path,
      ).toEqual([]);
    }
  });

  it("is imported by a fresh project's Node process, calls the service and verifies the event the service signs", async () => {
    writeFileSync(
      join(project, "main.mjs"),
      `
import { createServer } from "node:http";
import {
  constructEvent,
  createClient,
  handleEvent,
  SettlementApiError,
  SIGNATURE_HEADER,
  WebhookSignatureError,
} from "@usdc-settlement/client";

const settlement = createClient({ apiKey: process.env.API_KEY, network: "local", baseUrl: process.env.BASE_URL });
const received = [];
let secret;
const processed = new Set();
const store = {
  async recordIfNew(id) { if (processed.has(id)) return false; processed.add(id); return true; },
  async markProcessed() {},
};
const receiver = createServer(async (request, response) => {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const rawBody = Buffer.concat(chunks);
  const signatureHeader = request.headers[SIGNATURE_HEADER.toLowerCase()];
  const result = await handleEvent({ rawBody, signatureHeader, secret, store, apply: (event) => received.push(event) });
  let wrongSecret;
  try { constructEvent(rawBody, signatureHeader, "whsec_not_the_secret"); } catch (error) {
    wrongSecret = error instanceof WebhookSignatureError ? error.code : String(error);
  }
  received.push({ outcome: result.outcome, wrongSecret });
  response.writeHead(result.status).end();
});
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));

const endpoint = await settlement.webhookEndpoints.create({
  url: \`http://127.0.0.1:\${receiver.address().port}/webhooks/settlement\`,
  events: ["*"],
});
secret = endpoint.secret;
const test = await settlement.webhookEndpoints.sendTest(endpoint.id);
const listed = (await settlement.webhookEndpoints.list()).data.map((item) => item.id);
let refused;
try { await settlement.webhookEndpoints.retrieve("we_not_there"); } catch (error) {
  refused = { isApiError: error instanceof SettlementApiError, status: error.status, code: error.code };
}
const unauthenticated = await createClient({ apiKey: "sk_test_wrong", network: "local", baseUrl: process.env.BASE_URL })
  .webhookEndpoints.list().then(() => "answered", (error) => error.code);
receiver.close();
console.log(JSON.stringify({ endpointId: endpoint.id, secretShown: typeof secret, test, listed, received, refused, unauthenticated }));
`,
    );
    const { stdout } = await run(process.execPath, ["main.mjs"], {
      cwd: project,
      env: { PATH: process.env.PATH, API_KEY: apiKey, BASE_URL: baseUrl },
    });
    const outcome = JSON.parse(stdout);
    expect(outcome.secretShown).toBe("string");
    expect(outcome.listed).toContain(outcome.endpointId);
    // The service signed a webhook.test event and delivered it; the package verified it.
    expect(outcome.test).toMatchObject({ ok: true, statusCode: 200 });
    expect(outcome.received).toEqual([
      expect.objectContaining({ id: outcome.test.eventId, type: "webhook.test", data: { endpointId: outcome.endpointId } }),
      { outcome: "processed", wrongSecret: "no_matching_signature" },
    ]);
    expect(outcome.refused).toEqual({ isApiError: true, status: 404, code: "not_found" });
    expect(outcome.unauthenticated).toBe("unauthenticated");
  }, 60_000);

  it("gives a TypeScript project the generated types through its exports", async () => {
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          lib: ["ES2023", "DOM"],
          types: [],
          strict: true,
          noEmit: true,
        },
        files: ["shop.ts", "typo.ts", "field.ts"],
      }),
    );
    const shop = `
import { createClient, type CheckoutSession, type components, type SettlementClient, type SettlementEvent } from "@usdc-settlement/client";
const settlement: SettlementClient = createClient({ apiKey: "sk_test_x", network: "local" });
export async function status(id: string): Promise<CheckoutSession["status"]> {
  return (await settlement.checkout.sessions.retrieve(id)).status;
}
export const endpoint: components["schemas"]["WebhookEndpoint"]["events"] = ["purchase.settled"];
export function paid(event: SettlementEvent): string | undefined {
  switch (event.type) {
    case "purchase.settled": return event.data.amountPaid;
    case "reward.claimed": return event.data.amount;
    default: return undefined;
  }
}
`;
    writeFileSync(join(project, "shop.ts"), shop);
    // The types are real, not `any`: an event type the document does not list is refused.
    writeFileSync(join(project, "typo.ts"), shop.replace('["purchase.settled"]', '["purchase.setled"]'));
    // Narrowed by \`type\`, an event's data has its type's fields and no other.
    writeFileSync(join(project, "field.ts"), shop.replace("event.data.amountPaid", "event.data.amount"));
    const output = await run(process.execPath, [join(PROJECT_ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", project], {
      cwd: project,
    }).then(
      () => "no errors",
      (error: { stdout: string }) => error.stdout,
    );
    const errors = output.split("\n").filter((line) => / error TS\d+/.test(line));
    expect(errors).toEqual([
      expect.stringMatching(/^field\.ts\(10,\d+\): error TS\d+: Property 'amount' does not exist/),
      expect.stringMatching(/^typo\.ts\(7,\d+\): error TS\d+: Type '"purchase\.setled"' is not assignable/),
    ]);
  }, 60_000);
});
