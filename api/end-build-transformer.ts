import { createRequire } from "node:module";

/**
 * Ponder builds its own files (config, schema, indexing functions, API entry) through
 * Vite, and Vite's esbuild runs as a child process that stays for the life of the
 * service: 70 to 150 MiB of resident memory (the Go heap left by the transforms) that
 * `ponder start` and `ponder serve` never use again once the API entry is built, which
 * Ponder does last. This ends that child. esbuild starts a new one by itself if anything
 * transforms again, so ending it never breaks a later build; `ponder dev`, which rebuilds
 * on every change, keeps it. Returns whether a transformer was found to end.
 */
export function endBuildTransformer(): boolean {
  if (process.argv.includes("dev")) return false;
  try {
    // esbuild as Vite resolves it (today the project's one copy, `overrides` in
    // package.json), the module instance Vite imported: Node shares a CommonJS module
    // between `import` and `require`.
    const requireFromHere = createRequire(import.meta.url);
    const esbuild = createRequire(requireFromHere.resolve("vite"))("esbuild") as { stop?: () => unknown };
    if (typeof esbuild.stop !== "function") return false;
    void esbuild.stop();
    return true;
  } catch {
    // Vite or esbuild not installed where expected: nothing of ours to end.
    return false;
  }
}
