import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadBundle } from "../../bin/bundle-cache.js";

// The bundles the operator CLI and the service's runtime load instead of their TypeScript
// (bin/bundle-cache.js), against a project of two files in a temporary folder.
const root = mkdtempSync(join(tmpdir(), "bundle-cache-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

writeFileSync(join(root, "package-lock.json"), "{}");
mkdirSync(join(root, "lib"));
writeFileSync(
  join(root, "lib", "entry.ts"),
  'export { answer } from "./answer";\nexport const here: string = import.meta.url;\n',
);
writeFileSync(join(root, "lib", "answer.ts"), "export const answer: number = 1;\n");

const load = (name = "probe") => loadBundle({ root, name, entry: "lib/entry.ts", packagesExternal: true });
const bundleOf = (name = "probe") => join(root, "node_modules", ".cache", name, "bundle.mjs");
/** An mtime in the future: saved after the bundle was written, whatever the clock's resolution. */
const touchLater = (path: string) => utimesSync(path, new Date(), new Date(Date.now() + 5_000));

describe("loadBundle", () => {
  it("writes the bundle once and loads it; a module keeps its own file's import.meta.url", async () => {
    const first = await load();
    expect(first?.answer).toBe(1);
    expect(first?.here).toBe(`file://${join(root, "lib", "entry.ts")}`);
    const written = readFileSync(bundleOf(), "utf8");
    await load();
    expect(readFileSync(bundleOf(), "utf8")).toBe(written);
  });

  it("writes it again when a file in it changed", async () => {
    const answer = join(root, "lib", "answer.ts");
    writeFileSync(answer, "export const answer: number = 2;\n");
    touchLater(answer);
    await load();
    expect(readFileSync(bundleOf(), "utf8")).toContain("answer = 2");
  });

  it("writes it again when the installed packages changed", async () => {
    const before = readFileSync(join(root, "node_modules", ".cache", "probe", "inputs.json"), "utf8");
    touchLater(join(root, "package-lock.json"));
    await load();
    expect(readFileSync(join(root, "node_modules", ".cache", "probe", "inputs.json"), "utf8")).not.toBe(before);
  });

  // root writes through any file mode, so this one runs for other users only.
  it.skipIf(process.getuid?.() === 0)(
    "answers undefined where the cache cannot be written, so the caller loads its TypeScript itself",
    async () => {
      chmodSync(join(root, "node_modules", ".cache"), 0o555);
      try {
        expect(await load("read-only")).toBeUndefined();
      } finally {
        chmodSync(join(root, "node_modules", ".cache"), 0o755);
      }
    },
  );
});
