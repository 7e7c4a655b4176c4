import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

// A folder imports another only one way, and no chain of imports leads back to where it started
// (docs/architecture.md, "how money moves through the folders"). A grep over the source, no
// service needed: run-time imports only (an `import type`, or braces naming only types, vanish
// at build time and make no cycle). Every circle is found, through two folders (A -> B -> A) or
// more (A -> B -> C -> A): the folders of one strongly connected component of the import graph.
// None is left; a new one fails here, naming its folders.

const ROOTS = ["api", "console/src"];

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

/** Folder → the folders it imports at run time. */
function importGraph(): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const file of ROOTS.flatMap(sourceFiles)) {
    const from = dirname(file);
    for (const to of runtimeImportFolders(file, readFileSync(file, "utf8"))) {
      if (to === from) continue;
      edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  }
  return edges;
}

/**
 * The import circles of a graph: each strongly connected component of more than one folder
 * (Tarjan's algorithm), its folders sorted and joined by " <-> ", the list sorted.
 */
function importCircles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  let next = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[] = [];
  const visit = (folder: string) => {
    order.set(folder, next);
    low.set(folder, next);
    next++;
    stack.push(folder);
    onStack.add(folder);
    for (const target of edges.get(folder) ?? []) {
      if (!order.has(target)) {
        visit(target);
        low.set(folder, Math.min(low.get(folder) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(folder, Math.min(low.get(folder) as number, order.get(target) as number));
      }
    }
    if (low.get(folder) !== order.get(folder)) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === folder) break;
    }
    if (component.length > 1) circles.push(component.sort().join(" <-> "));
  };
  for (const folder of [...edges.keys()].sort()) if (!order.has(folder)) visit(folder);
  return circles.sort();
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

  it("finds circles through two folders and through several", () => {
    const graph = (...arrows: string[]) => {
      const edges = new Map<string, Set<string>>();
      for (const arrow of arrows) {
        const [from, to] = arrow.split("->") as [string, string];
        edges.set(from, (edges.get(from) ?? new Set()).add(to));
      }
      return edges;
    };
    expect(importCircles(graph("a->b", "b->c", "a->c"))).toEqual([]);
    expect(importCircles(graph("a->b", "b->a", "c->a"))).toEqual(["a <-> b"]);
    expect(importCircles(graph("a->b", "b->c", "c->a", "c->d"))).toEqual(["a <-> b <-> c"]);
    expect(importCircles(graph("a->b", "b->c", "c->a", "d->e", "e->d"))).toEqual(["a <-> b <-> c", "d <-> e"]);
  });

  it("has no import circle between folders, of two folders or more", () => {
    expect(importCircles(importGraph())).toEqual([]);
  });
});
