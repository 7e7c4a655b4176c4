import { fileURLToPath } from "node:url";
import { loadBundle } from "../bin/bundle-cache.js";

type Runtime = typeof import("./runtime");

let loading: Promise<Runtime> | undefined;

/**
 * The service's code (api/runtime.ts and everything it imports) for Ponder's files.
 * Ponder runs the files it builds through Vite, which transformed our ~200 modules on
 * every start of the service (about 1.5 s of CPU, and their module graph stayed in
 * memory); `ponder start` and `ponder serve` load them as one bundle instead, written to
 * node_modules/.cache/settlement-runtime/ when a source changed (bin/bundle-cache.js).
 * `ponder dev` keeps Vite's modules, so that it rebuilds when a file changes; so does a
 * machine where the bundle cannot be written or esbuild is not installed. One promise for
 * the process: the config and the API entry share one copy of every module.
 */
export function loadRuntime(): Promise<Runtime> {
  loading ??= (async () => {
    if (!process.argv.includes("dev")) {
      const bundled = await loadBundle({
        root: fileURLToPath(new URL("..", import.meta.url)),
        name: "settlement-runtime",
        entry: "api/runtime.ts",
        packagesExternal: true,
      });
      if (bundled !== undefined) return bundled as Runtime;
    }
    return import("./runtime");
  })();
  return loading;
}
