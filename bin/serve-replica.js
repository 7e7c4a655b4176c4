#!/usr/bin/env node
// An API replica of the fleet as a plain Hono server, outside Ponder (`npm run serve:replica`;
// docs/deploy.md, "The fleet"). Its TypeScript (api/replica/plain-server.ts and what it uses)
// runs from one bundle that esbuild writes to node_modules/.cache/settlement-replica/ whenever
// one of its files changed, as the operator CLI does (bin/settlement.js); where the bundle
// cannot be written, from the TypeScript through tsx.
//
// Listens on PORT (or --port), on --hostname if given; reads DATABASE_URL with DATABASE_SCHEMA
// set to the indexer's views schema, and the store. Exit codes: 0 drained after SIGTERM or
// SIGINT, 1 refused to start (the port taken, a configuration problem: the message names it).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadBundle } from "./bundle-cache.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

async function loadReplica() {
  const bundled = await loadBundle({
    root,
    name: "settlement-replica",
    entry: "api/replica/plain-server.ts",
    packagesExternal: true,
    alsoWatched: ["bin/serve-replica.js"],
  });
  if (bundled !== undefined) return bundled;
  const { register } = await import("tsx/esm/api");
  register();
  return import("../api/replica/plain-server.ts");
}

const { runPlainReplica } = await loadReplica();
process.exit(await runPlainReplica(process.argv.slice(2), process.env));
