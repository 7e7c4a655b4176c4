import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineConfig, type Plugin } from "vite";

// Read by Ponder only (vitest reads vitest.config.ts; the console builds with its own inline
// configuration, console/build.ts). Ponder builds the config, the schema, src/ and the API
// through a Vite server, and Vite's server watches the whole project for changes, so that
// `ponder dev` can rebuild. `ponder start` (npm start, every test stack, production) never
// rebuilds, yet its watcher walked every file under the project at start and again whenever
// the embedded index wrote under .data/: 7 to 10% of a core while the service was idle.
// Only `ponder dev` watches, and not the folders it never builds from.
const rebuildsOnChange = process.argv.includes("dev");

/**
 * Loads installed packages with Node's own loader instead of through Vite. vite-node (which
 * runs the files Ponder builds) transforms every package file it finds under an `esm/`
 * folder as if it were our source: Kysely (260 files), Ponder itself and, through it,
 * GraphQL Yoga and its tools (about 400 more). That was about 3.5 s of CPU on every start of
 * the service, and their module graph stayed in memory. A bare import that Vite resolves
 * into such a folder is answered with a one-line module under node_modules/.cache that
 * re-exports the package; vite-node hands any `.mjs` file under node_modules to Node, and
 * Node resolves the package from there exactly as it would from the project's root.
 */
function nativePackages(): Plugin {
  const shimDir = join(process.cwd(), "node_modules", ".cache", "vite-native-packages");
  return {
    name: "settlement:native-packages",
    enforce: "pre",
    async resolveId(source, importer, options) {
      if (!options.ssr || !/^(@[\w.-]+\/)?[\w.-]/.test(source) || source.includes(":")) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      const file = resolved?.id.split("?")[0];
      if (file === undefined || resolved?.external || !file.includes("/node_modules/") || !/\/esm?\/.*\.js$/.test(file)) {
        return null;
      }
      const shim = join(
        shimDir,
        `${source.replace(/[^\w.-]/g, "_")}-${createHash("sha256").update(source).digest("hex").slice(0, 8)}.mjs`,
      );
      if (!existsSync(shim)) {
        mkdirSync(shimDir, { recursive: true });
        const specifier = JSON.stringify(source);
        // Written beside and renamed into place: two services starting at once never read half a file.
        const temporary = `${shim}.${process.pid}.tmp`;
        writeFileSync(
          temporary,
          `export * from ${specifier};\nimport * as all from ${specifier};\nexport default all.default;\n`,
        );
        renameSync(temporary, shim);
      }
      return shim;
    },
  };
}

export default defineConfig({
  plugins: [nativePackages()],
  // Vite's dependency pre-bundling is for browsers it serves; Ponder serves none. In
  // middleware mode (below) Vite still started it with the server: an esbuild scan of
  // console/index.html and everything it imports (1.7 s, in the background of every start),
  // then an optimizer run. When that scan reached esbuild after the build was done, it
  // started esbuild's child again and kept it for the life of the service
  // (api/end-build-transformer.ts), and a run cut short by a stop left a
  // .ponder/vite/deps_temp_* folder. No discovery and nothing included turns it off.
  optimizeDeps: { noDiscovery: true, include: [] },
  server: {
    // Ponder uses the server for its module graph only and never listens on it. Outside
    // middleware mode Vite adds a SIGTERM handler that closes the server and calls
    // process.exit() at once, which cut Ponder's own shutdown short (its lock on the index
    // was left held, and the next start waited for it to expire).
    middlewareMode: true,
    watch: rebuildsOnChange
      ? { ignored: ["**/.data/**", "**/.ponder/**", "**/test-artifacts/**", "**/console/**", "**/docs/**", "**/test/**"] }
      : null,
  },
});
