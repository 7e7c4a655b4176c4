import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Builds the console (SPEC section 13) into `console/dist/<source hash>/` when no
 * build of the current sources exists, and points `console/dist/current` at it.
 * `npm start` and every test stack call this before the service starts, so a fresh
 * clone needs no extra command and an edited source is never served stale.
 *
 * Why Vite 5.4 and no React plugin: Ponder 0.16 itself depends on Vite 5.4 (its
 * indexer runs through vite-node), so the console shares that one copy instead of
 * adding a second major version; Vite 5 compiles TSX through esbuild
 * (`esbuild: { jsx: "automatic" }`), which is all the console needs (no fast refresh).
 * That esbuild is the project's one copy (0.28), not the 0.21 Vite 5 would bring.
 *
 * Several test files start stacks at once: each builds into a private directory and
 * renames it into place (atomic), so two builders never mix files and the loser's
 * build is simply dropped.
 */
export const CONSOLE_ROOT = dirname(fileURLToPath(import.meta.url));
export const CONSOLE_DIST = join(CONSOLE_ROOT, "dist");
const PROJECT_ROOT = dirname(CONSOLE_ROOT);

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "dist" || entry.name.startsWith(".build-")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else files.push(path);
  }
  return files.sort();
}

/** A hash of everything the build reads: the console's sources and the locked dependency versions. */
export function consoleSourceHash(): string {
  const hash = createHash("sha256");
  for (const file of [...sourceFiles(CONSOLE_ROOT), join(PROJECT_ROOT, "package-lock.json")]) {
    hash.update(relative(PROJECT_ROOT, file)).update("\0").update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

/** The directory of the build the service serves, if any (read from `dist/current`). */
export function currentConsoleBuild(): string | undefined {
  const pointer = join(CONSOLE_DIST, "current");
  if (!existsSync(pointer)) return undefined;
  const dir = join(CONSOLE_DIST, readFileSync(pointer, "utf8").trim());
  return existsSync(join(dir, "index.html")) ? dir : undefined;
}

export async function ensureConsoleBuilt(
  options: { log?: (line: string) => void } = {},
): Promise<{ dir: string; built: boolean }> {
  const hash = consoleSourceHash();
  const target = join(CONSOLE_DIST, hash);
  let built = false;
  if (!existsSync(join(target, "index.html"))) {
    mkdirSync(CONSOLE_DIST, { recursive: true });
    const scratch = join(CONSOLE_DIST, `.build-${process.pid}-${randomBytes(4).toString("hex")}`);
    options.log?.("building the console (sources changed or never built)…");
    const { build } = await import("vite");
    // Vite builds React's development runtime (jsxDEV, this machine's file paths in the
    // bundle) whenever NODE_ENV is set to anything but "production", as vitest sets it to
    // "test": the build is the same whichever command made it, since npm start serves it.
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = "production";
    try {
      await build({
        root: CONSOLE_ROOT,
        base: "/console/",
        configFile: false,
        logLevel: "warn",
        mode: "production",
        esbuild: { jsx: "automatic" },
        build: {
          outDir: scratch,
          // Vite 5 here runs on the project's one esbuild (0.28, `overrides` in package.json),
          // which cannot lower the wallet libraries' code to Vite 5's default (Chrome 87,
          // Safari 14). ES2022 is Chrome 94, Firefox 93, Safari 15.4: every browser that
          // runs a wallet extension or a wallet's in-app browser today.
          target: "es2022",
          emptyOutDir: true,
          assetsInlineLimit: 0,
          sourcemap: false,
          reportCompressedSize: false,
          // One bundle of about 450 kB (React, wagmi, viem's signing helpers) is expected.
          chunkSizeWarningLimit: 1000,
          rollupOptions: {
            // React libraries mark modules "use client" (for server components); a plain bundle ignores it.
            onwarn: (warning, warn) => {
              if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
            },
          },
        },
      });
      if (existsSync(join(target, "index.html"))) rmSync(scratch, { recursive: true, force: true });
      else {
        try {
          renameSync(scratch, target);
        } catch (error) {
          // Another builder renamed its build into place first: keep theirs.
          if (!existsSync(join(target, "index.html"))) throw error;
        }
      }
      built = true;
    } finally {
      if (nodeEnv === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = nodeEnv;
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  const pointer = join(CONSOLE_DIST, `current.${process.pid}.tmp`);
  writeFileSync(pointer, hash);
  renameSync(pointer, join(CONSOLE_DIST, "current"));
  // Older builds are removed once they are a day old (a running service may still serve one).
  for (const entry of readdirSync(CONSOLE_DIST)) {
    const path = join(CONSOLE_DIST, entry);
    if (entry === hash || entry === "current" || entry.endsWith(".tmp")) continue;
    if (Date.now() - statSync(path).mtimeMs > 86_400_000) rmSync(path, { recursive: true, force: true });
  }
  return { dir: target, built };
}
