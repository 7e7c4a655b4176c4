import { defineConfig } from "vite";

// Read by Ponder only (vitest reads vitest.config.ts; the console builds with its own inline
// configuration, console/build.ts). Ponder builds the config, the schema, src/ and the API
// through a Vite server, and Vite's server watches the whole project for changes, so that
// `ponder dev` can rebuild. `ponder start` (npm start, every test stack, production) never
// rebuilds, yet its watcher walked every file under the project at start and again whenever
// the embedded index wrote under .data/: 7 to 10% of a core while the service was idle.
// Only `ponder dev` watches, and not the folders it never builds from.
const rebuildsOnChange = process.argv.includes("dev");

export default defineConfig({
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
