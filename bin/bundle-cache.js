// One TypeScript entry compiled by esbuild into a single ES module under
// node_modules/.cache/<name>/, written again whenever one of the project's files in it
// (or the installed packages) changed, and loaded with Node's own loader. Used by the
// operator CLI (bin/settlement.js) and by the service's runtime (api/load-runtime.ts):
// loading hundreds of TypeScript modules through a transformer on every start is what
// this saves. Where the bundle cannot be written (a read-only install) or esbuild is not
// installed (devDependencies pruned), `loadBundle` answers `undefined` and the caller
// loads the TypeScript its own way.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** This file: a change to how bundles are written makes every bundle stale. */
const SELF = fileURLToPath(import.meta.url);

function modifiedAt(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** True when the bundle exists and no project file in it (nor the installed packages) changed since it was written. */
function bundleIsCurrent(root, bundlePath, inputsPath, alsoWatched) {
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(inputsPath, "utf8"));
  } catch {
    return false;
  }
  if (recorded.root !== root || !Number.isFinite(modifiedAt(bundlePath))) return false;
  const watched = [...recorded.inputs, "package-lock.json", SELF, ...alsoWatched];
  // Compared with when the build started: a file saved during the build makes the next start build again.
  return watched.every((input) => modifiedAt(resolve(root, input)) < recorded.startedAt);
}

/**
 * A bundled module's `import.meta.url` is the bundle's; the few modules that find files
 * beside themselves get their own source file's URL written in instead.
 */
const sourceFileUrls = {
  name: "source-file-urls",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!source.includes("import.meta.url")) return undefined;
      return { contents: source.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)), loader: "ts" };
    });
  },
};

async function writeBundle({ root, entry, bundlePath, inputsPath, external, packagesExternal }) {
  const { build, stop } = await import("esbuild");
  mkdirSync(join(bundlePath, ".."), { recursive: true });
  // Written beside and renamed into place, so two processes started at once never read half a bundle.
  const temporary = `${bundlePath}.${process.pid}.tmp`;
  const startedAt = Date.now();
  let result;
  try {
    result = await build({
      absWorkingDir: root,
      entryPoints: [join(root, entry)],
      outfile: temporary,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      ...(packagesExternal ? { packages: "external" } : { external }),
      plugins: [sourceFileUrls],
      metafile: true,
      logLevel: "error",
      // Bundled CommonJS packages call require(); an ES module has none of its own.
      banner: {
        js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
      },
    });
  } finally {
    // esbuild's service is a child process that would otherwise stay for the life of this
    // one (tens of MiB resident); a later build starts it again. Each process writes one
    // bundle at a time (the service's runtime, the CLI's), so no other build is cut short.
    await stop();
  }
  const inputs = Object.keys(result.metafile.inputs).filter((input) => !input.includes("node_modules/"));
  // The bundle first: a process reading in between sees old inputs beside a new bundle and
  // writes it again, never new inputs vouching for the old bundle.
  renameSync(temporary, bundlePath);
  writeFileSync(`${inputsPath}.${process.pid}.tmp`, JSON.stringify({ root, startedAt, inputs }));
  renameSync(`${inputsPath}.${process.pid}.tmp`, inputsPath);
}

/**
 * The entry's module, from its bundle (written first when missing or stale), or
 * `undefined` when the bundle cannot be written here.
 * @param {{ root: string; name: string; entry: string; external?: string[]; packagesExternal?: boolean; alsoWatched?: string[] }} options
 */
export async function loadBundle({ root, name, entry, external = [], packagesExternal = false, alsoWatched = [] }) {
  const cacheDir = join(root, "node_modules", ".cache", name);
  const bundlePath = join(cacheDir, "bundle.mjs");
  const inputsPath = join(cacheDir, "inputs.json");
  try {
    if (!bundleIsCurrent(root, bundlePath, inputsPath, alsoWatched)) {
      await writeBundle({ root, entry, bundlePath, inputsPath, external, packagesExternal });
    }
  } catch (error) {
    const code = error?.code;
    if (code === "EACCES" || code === "EROFS" || code === "EPERM" || code === "ERR_MODULE_NOT_FOUND") return undefined;
    throw error;
  }
  return import(pathToFileURL(bundlePath).href);
}
