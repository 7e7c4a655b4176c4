/**
 * How many of the suite's test files start no chain: `npx tsx scripts/count-test-files.ts` prints
 * "N of M test files start no chain" and, with `--list`, each file marked `chain` or `pure`.
 *
 * A file starts a chain when it calls one of the functions that start Anvil or the indexer (a stack,
 * Anvil alone, a Ponder process). No module of test/support/ starts one on a file's behalf other than
 * through `startTestStack`, which the file then calls itself. Issue 41 asks that at least 60% of the
 * files start none: those run in seconds.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
const STARTS_A_CHAIN = /\b(startTestStack|startLocalStack|startAnvil|startPonder)\s*\(/;

function testFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === "support" ? [] : testFiles(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

const files = testFiles(join(ROOT, "test")).sort();
const chainFree = files.filter((file) => !STARTS_A_CHAIN.test(readFileSync(file, "utf8")));
if (process.argv.includes("--list"))
  for (const file of files) console.log(`${chainFree.includes(file) ? "pure " : "chain"} ${relative(ROOT, file)}`);
console.log(
  `${chainFree.length} of ${files.length} test files start no chain (${Math.round((100 * chainFree.length) / files.length)}%)`,
);
