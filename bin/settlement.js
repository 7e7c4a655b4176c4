#!/usr/bin/env node
// The operator CLI (`npx settlement <command>`). Its TypeScript (cli/main.ts and the
// domain modules it uses) runs from one bundle that esbuild writes to
// node_modules/.cache/settlement-cli/ and writes again whenever one of the project's
// files in it changed: loading ~1,000 modules through tsx on every command took about
// three seconds, the bundle starts in about one (docs/deploy.md, "The operator CLI").
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadBundle } from "./bundle-cache.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Packages loaded from node_modules as they are: native addons and WebAssembly found beside their own files. */
const EXTERNAL = ["better-sqlite3", "pg", "pg-native", "@electric-sql/pglite", "kysely-pglite-dialect", "ponder"];

/** Where the CLI is loaded from: the bundle, or (when it cannot be written: a read-only install) the TypeScript through tsx. */
async function loadCli() {
  const bundled = await loadBundle({
    root,
    name: "settlement-cli",
    entry: "cli/main.ts",
    external: EXTERNAL,
    alsoWatched: ["bin/settlement.js"],
  });
  if (bundled !== undefined) return bundled;
  const { register } = await import("tsx/esm/api");
  register();
  return import("../cli/main.ts");
}

const { runCli } = await loadCli();
process.exitCode = await runCli(process.argv.slice(2), process.env);
