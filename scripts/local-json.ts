import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { LocalJson } from "../local/local-stack.js";

const PROJECT_ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The local stack's data directory: `DATA_DIR`, or `.data/` of the project. */
export function localDataDir(): string {
  return process.env.DATA_DIR ?? join(PROJECT_ROOT, ".data");
}

/** What `npm start` wrote: where the service runs and the demo partner's key. */
export function readLocalJson(): LocalJson {
  const path = process.env.LOCAL_JSON ?? join(localDataDir(), "local.json");
  try {
    return JSON.parse(readFileSync(path, "utf8")) as LocalJson;
  } catch {
    throw new Error(`${path} is missing: run \`npm start\` first (it writes the file).`);
  }
}

export function partnerHeaders(local: LocalJson): Record<string, string> {
  return { Authorization: `Bearer ${local.partner.apiKey}`, "Content-Type": "application/json" };
}
