import { PROBLEM_CODES, PROBLEM_REGISTRY, problemStatuses } from "../api/http/problem-catalogue.js";

/** Where the generated table starts in docs/errors.md; everything above it is written by hand. */
export const TABLE_MARKER =
  "<!-- The table below is generated from api/http/problem-catalogue.ts by `npm run docs:errors`; a test fails when it is stale. -->";

/** One row per registered code, in the registry's order (grouped by status). */
export function renderProblemTable(): string {
  const escapeCell = (text: string) => text.replaceAll("|", "\\|");
  return [
    "| Code | Status | Title | When it happens |",
    "|---|---|---|---|",
    ...PROBLEM_CODES.map((code) => {
      const { title, meaning } = PROBLEM_REGISTRY[code];
      return `| \`${code}\` | ${problemStatuses(code).join(", ")} | ${escapeCell(title)} | ${escapeCell(meaning)} |`;
    }),
  ].join("\n");
}

/** docs/errors.md with its hand-written introduction kept and the table regenerated after the marker. */
export function renderErrorsDoc(current: string): string {
  const at = current.indexOf(TABLE_MARKER);
  if (at === -1) throw new Error(`docs/errors.md has lost its marker line: ${TABLE_MARKER}`);
  return `${current.slice(0, at)}${TABLE_MARKER}\n\n${renderProblemTable()}\n`;
}
