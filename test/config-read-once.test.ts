import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Every TypeScript file under `dir`, as paths relative to the project. */
function sources(dir: string): string[] {
  return readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => /\.(ts|tsx|mts)$/.test(name))
    .map((name) => join(dir, name));
}

/** `process.env` in any spelling a module could use to reach it. */
const ENV_READ = /\bprocess\s*(\.\s*env\b|\[\s*["'`]env["'`]\s*\])|\bimport\.meta\.env\b|from\s+["']node:process["']/;

describe("the configuration is read once", () => {
  // The environment is read at the entry points only (ponder.config.ts hands it to
  // api/config, the CLI's main, the local launcher, scripts, tests); the service's
  // modules get the validated configuration through the app context.
  it("has no module of the service (api/, src/) reading the environment", () => {
    const files = [...sources("api"), ...sources("src")];
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.filter((file) => ENV_READ.test(readFileSync(join(PROJECT_ROOT, file), "utf8")));
    expect(offenders).toEqual([]);
  });

  it("recognises the spellings it forbids", () => {
    for (const line of [
      "const a = process.env.X;",
      "process['env'].X",
      "const { env } = process; process .env",
      'import { env } from "node:process";',
    ]) {
      expect([line, ENV_READ.test(line)]).toEqual([line, true]);
    }
    expect(ENV_READ.test("const environment = context.settings;")).toBe(false);
  });
});
