import type { z } from "zod";
import { problems } from "./problem.js";

/** Opaque keyset cursors: base64url JSON, validated on the way back in. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

export function decodeCursor<schema extends z.ZodType>(cursor: string, schema: schema): z.infer<schema> {
  try {
    return schema.parse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
  } catch {
    throw problems.invalidRequest("`cursor` is not a cursor this service issued.");
  }
}

/**
 * Keyset paging: a list asks its query for one row more than the page (`limit + 1`).
 * That extra row only says a next page exists; the next page starts after `last`,
 * the page's last row, from which the cursor is made. No next page: `last` is undefined.
 */
export function splitPage<row>(rows: readonly row[], limit: number): { page: row[]; last: row | undefined } {
  const page = rows.slice(0, limit);
  return { page, last: rows.length > limit ? page.at(-1) : undefined };
}
