import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

// A folder imports another only one way (docs/architecture.md, "how money moves through the
// folders"). A grep over the source, no service needed: run-time imports only (an `import type`,
// or braces naming only types, vanish at build time and make no cycle). The pairs that still
// import each other are listed; a new one fails here, and one that is broken must leave the list.

const ROOTS = ["api", "console/src"];

/** Folder pairs that still import each other at run time, each written in sorted order. */
const KNOWN_PAIRS = ["api/checkout <-> api/outbox", "api/purchases <-> api/refunds"];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return name === "generated" || name === "vendor" ? [] : sourceFiles(path);
    return /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** The folders a source imports from at run time (relative specifiers only). */
function runtimeImportFolders(file: string, source: string): string[] {
  const folders: string[] = [];
  for (const match of source.matchAll(/(?:import|export)\s+(type\s+)?([^;]*?)\s+from\s+"(\.[^"]+)"/gs)) {
    if (match[1] !== undefined) continue;
    const names = (match[2] ?? "").trim();
    if (names.startsWith("{")) {
      const named = names
        .replace(/[{}]/g, "")
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name !== "");
      if (named.length > 0 && named.every((name) => name.startsWith("type "))) continue;
    }
    folders.push(dirname(normalize(join(dirname(file), match[3] ?? ""))));
  }
  return folders;
}

function mutualPairs(): string[] {
  const edges = new Map<string, Set<string>>();
  for (const file of ROOTS.flatMap(sourceFiles)) {
    const from = dirname(file);
    for (const to of runtimeImportFolders(file, readFileSync(file, "utf8"))) {
      if (to === from) continue;
      edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  }
  const pairs = new Set<string>();
  for (const [from, targets] of edges) {
    for (const to of targets) if (edges.get(to)?.has(from)) pairs.add([from, to].sort().join(" <-> "));
  }
  return [...pairs].sort();
}

describe("folders import each other one way", () => {
  it("reads run-time imports and skips type-only ones", () => {
    expect(runtimeImportFolders("api/a/x.ts", 'import { b } from "../b/y.js";')).toEqual(["api/b"]);
    expect(runtimeImportFolders("api/a/x.ts", 'import type { B } from "../b/y.js";')).toEqual([]);
    expect(runtimeImportFolders("api/a/x.ts", 'import { type B, type C } from "../b/y.js";')).toEqual([]);
    expect(runtimeImportFolders("api/a/x.ts", 'import { type B, c } from "../b/y.js";')).toEqual(["api/b"]);
    expect(runtimeImportFolders("api/a/x.ts", 'export { d } from "./d/z.js";')).toEqual(["api/a/d"]);
    expect(runtimeImportFolders("api/a/x.ts", 'import { viem } from "viem";')).toEqual([]);
  });

  it("has no folder pair importing each other beyond the known ones", () => {
    expect(mutualPairs()).toEqual(KNOWN_PAIRS);
  });
});
