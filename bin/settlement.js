#!/usr/bin/env node
// The operator CLI (`npx settlement <command>`). Its TypeScript (cli/main.ts and the
// domain modules it uses) runs from one bundle that esbuild writes to
// node_modules/.cache/settlement-cli/ and writes again whenever one of the project's
// files in it changed: loading ~1,000 modules through tsx on every command took about
// three seconds, the bundle starts in about one (docs/deploy.md, "The operator CLI").
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cacheDir = join(root, "node_modules", ".cache", "settlement-cli");
const bundlePath = join(cacheDir, "cli.mjs");
const inputsPath = join(cacheDir, "inputs.json");

/** Packages loaded from node_modules as they are: native addons and WebAssembly found beside their own files. */
const EXTERNAL = ["better-sqlite3", "pg", "pg-native", "@electric-sql/pglite", "kysely-pglite-dialect", "ponder"];

function modifiedAt(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** True when the bundle exists and no project file in it (nor the installed packages) changed since it was written. */
function bundleIsCurrent() {
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(inputsPath, "utf8"));
  } catch {
    return false;
  }
  if (!Number.isFinite(modifiedAt(bundlePath))) return false;
  const watched = [...recorded.inputs, "package-lock.json", "bin/settlement.js"];
  // Compared with when the build started: a file saved during the build makes the next command build again.
  return watched.every((input) => modifiedAt(join(root, input)) < recorded.startedAt);
}

async function writeBundle() {
  const { build } = await import("esbuild");
  mkdirSync(cacheDir, { recursive: true });
  // Written beside and renamed into place, so two commands started at once never read half a bundle.
  const temporary = `${bundlePath}.${process.pid}.tmp`;
  const startedAt = Date.now();
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, "cli", "main.ts")],
    outfile: temporary,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: EXTERNAL,
    metafile: true,
    logLevel: "error",
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  });
  const inputs = Object.keys(result.metafile.inputs).filter((input) => !input.includes("node_modules/"));
  writeFileSync(`${inputsPath}.${process.pid}.tmp`, JSON.stringify({ startedAt, inputs }));
  renameSync(`${inputsPath}.${process.pid}.tmp`, inputsPath);
  renameSync(temporary, bundlePath);
}

/** Where the CLI is loaded from: the bundle, or (when it cannot be written: a read-only install) the TypeScript through tsx. */
async function loadCli() {
  try {
    if (!bundleIsCurrent()) await writeBundle();
    return await import(pathToFileURL(bundlePath).href);
  } catch (error) {
    if (error?.code !== "EACCES" && error?.code !== "EROFS" && error?.code !== "EPERM") throw error;
    const { register } = await import("tsx/esm/api");
    register();
    return import("../cli/main.ts");
  }
}

const { runCli } = await loadCli();
process.exitCode = await runCli(process.argv.slice(2), process.env);
