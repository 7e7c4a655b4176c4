import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ProblemError } from "../api/http/problem.js";
import { PROBLEM_CODES, type ProblemCode, problemStatuses } from "../api/http/problem-catalogue.js";
import { renderErrorsDoc } from "../scripts/errors-docs.js";

/**
 * The registry in api/http/problem-catalogue.ts is the one source of problem codes.
 * The type of `ProblemError`'s `code` keeps unregistered literals from compiling;
 * this test reads the source to catch what types cannot: a status written beside a
 * code that the registry does not list for it, and registry entries nothing throws.
 */
const root = join(import.meta.dirname, "..");
const registryFile = join(root, "api/http/problem-catalogue.ts");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The text of each `new ProblemError({ ... })` call, found by counting parentheses. */
function problemConstructions(text: string): string[] {
  const calls: string[] = [];
  for (let start = text.indexOf("new ProblemError("); start !== -1; start = text.indexOf("new ProblemError(", start + 1)) {
    let depth = 0;
    for (let i = start + "new ProblemError".length; i < text.length; i++) {
      if (text[i] === "(") depth++;
      if (text[i] === ")" && --depth === 0) {
        calls.push(text.slice(start, i + 1));
        break;
      }
    }
  }
  return calls;
}

const files = [...sourceFiles(join(root, "api")), ...sourceFiles(join(root, "src"))].filter((file) => file !== registryFile);
const sources = files.map((file) => ({ file: relative(root, file), text: readFileSync(file, "utf8") }));
const registered = new Set<string>(PROBLEM_CODES);

describe("problem registry", () => {
  it("lists every code a ProblemError is built with, at the status written beside it", () => {
    const constructions = sources.flatMap(({ file, text }) => problemConstructions(text).map((call) => ({ file, call })));
    // Most problems are raised by their code alone (`problem("code", detail)`), at the registry's status.
    const byCode = sources.flatMap(({ file, text }) =>
      [...text.matchAll(/\bproblem\(\s*"([a-z][a-z0-9_]*)"/g)].map((match) => ({ file, code: match[1] as string })),
    );
    expect(constructions.length + byCode.length).toBeGreaterThan(40);
    const wrong: string[] = byCode
      .filter(({ code }) => !registered.has(code))
      .map(({ file, code }) => `${file}: ${code} is not in the registry`);
    for (const { file, call } of constructions) {
      const codeExpression = /\bcode:\s*([^,\n}]+)/.exec(call)?.[1] ?? "";
      // The results of the expression (`cond ? "a" : "b"`), not what a condition compares with.
      const codes = [...codeExpression.matchAll(/(===?\s*)?"([a-z][a-z0-9_]*)"/g)]
        .filter((match) => match[1] === undefined)
        .map((match) => match[2] as string);
      const statuses = [...call.matchAll(/status:\s*(\d{3})\b/g)].map((match) => Number(match[1]));
      for (const code of codes) {
        if (!registered.has(code)) wrong.push(`${file}: ${code} is not in the registry`);
        else if (statuses.length === 1 && !problemStatuses(code as ProblemCode).includes(statuses[0] as never))
          wrong.push(
            `${file}: ${code} thrown with ${statuses[0]}, registered with ${problemStatuses(code as ProblemCode).join("/")}`,
          );
      }
    }
    expect(wrong).toEqual([]);
  });

  it("has no entry that nothing in the service throws", () => {
    const everything = sources.map(({ text }) => text).join("\n");
    const unused = PROBLEM_CODES.filter((code) => !everything.includes(`"${code}"`));
    expect(unused).toEqual([]);
  });

  it("docs/errors.md is what `npm run docs:errors` generates, a row for every registered code", () => {
    const guide = readFileSync(join(root, "docs/errors.md"), "utf8");
    expect(guide).toBe(renderErrorsDoc(guide));
    const missing = PROBLEM_CODES.filter((code) => !guide.includes(`| \`${code}\` | ${problemStatuses(code).join(", ")} |`));
    expect(missing).toEqual([]);
  });

  it("refuses a status the registry does not list for the code", () => {
    expect(() => new ProblemError({ code: "not_found", status: 400 })).toThrow(/registered with status 404/);
    expect(new ProblemError({ code: "wrong_portal", status: 401 }).status).toBe(401);
    expect(new ProblemError({ code: "wrong_portal" }).status).toBe(403);
    expect(new ProblemError({ code: "session_expired" }).title).toBe("The checkout session has expired");
  });
});
