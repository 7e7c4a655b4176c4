import type { z } from "zod";
import { type ProblemError, problem } from "./problem.js";

/** The longest cursor this service issues is far below this; anything longer was not ours. */
const MAX_CURSOR_LENGTH = 512;

/** Opaque keyset cursors: base64url JSON, validated on the way back in. */
function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

function invalidCursor(): ProblemError {
  return problem("invalid_cursor", "`cursor` is not a cursor this service issued; start again without it.");
}

/**
 * Reads a cursor back, or throws `invalid_cursor` (400). Besides the caller's
 * schema, every number in it must be a safe integer: a crafted cursor can otherwise
 * carry 1e300 or 2^64 into a query, which the store answers with an overflow.
 */
function decodeCursor<schema extends z.ZodType>(cursor: string, schema: schema): z.infer<schema> {
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]*$/.test(cursor)) throw invalidCursor();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"), (_key, item: unknown) => {
      if (typeof item === "number" && !Number.isSafeInteger(item)) throw new Error("not a safe integer");
      return item;
    });
  } catch {
    throw invalidCursor();
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidCursor();
  return parsed.data;
}

/**
 * Keyset paging: a list asks its query for one row more than the page (`limit + 1`).
 * That extra row only says a next page exists; the next page starts after `last`,
 * the page's last row, from which the cursor is made. No next page: `last` is undefined.
 */
function splitPage<row>(rows: readonly row[], limit: number): { page: row[]; last: row | undefined } {
  const page = rows.slice(0, limit);
  return { page, last: rows.length > limit ? page.at(-1) : undefined };
}

/** The answer of every list: a page of items and the cursor of the next page (null on the last). */
export type Page<item> = { data: item[]; nextCursor: string | null };

/**
 * How a list reads its cursors. Usually the cursor carries the key of the page's last
 * row (`key` validates it, `keyOf` names it). A list whose cursor *names* a row
 * instead (`GET /v1/events`: the cursor is an event id, which partners also store and
 * pass as `after`) resolves it: `resolveCursor` looks the key up (undefined when the
 * cursor names no row of this list, which is `invalid_cursor`), and `cursorOf` gives
 * the cursor of a page's last row.
 */
type CursorOf<row, key> =
  | { key: z.ZodType<key>; keyOf: (row: row) => key; resolveCursor?: never; cursorOf?: never }
  | {
      resolveCursor: (cursor: string) => Promise<key | undefined>;
      cursorOf: (row: row) => string;
      key?: never;
      keyOf?: never;
    };

/**
 * The one paging helper of every list (docs/architecture.md, "Routes and lists"):
 * `?cursor=&limit=` in, `{ data, nextCursor }` out. `fetch` reads up to `take` rows
 * after the decoded key (undefined on the first page), in the list's order;
 * `keyOf` names the key of a row, which becomes the opaque cursor of the next page
 * (or `resolveCursor` and `cursorOf`, for a cursor that names a row: see `CursorOf`).
 * A cursor that does not decode to `key`, or that `resolveCursor` cannot resolve,
 * is `invalid_cursor` (400).
 */
export async function keysetPage<row, key, item = row>(
  params: {
    cursor: string | undefined;
    limit: number;
    fetch: (after: key | undefined, take: number) => Promise<readonly row[]>;
    view?: (rows: row[]) => item[] | Promise<item[]>;
  } & CursorOf<row, key>,
): Promise<Page<item>> {
  const after = params.cursor === undefined ? undefined : await readCursor(params.cursor, params);
  const rows = await params.fetch(after, params.limit + 1);
  const { page, last } = splitPage(rows, params.limit);
  const data = params.view === undefined ? (page as unknown as item[]) : await params.view(page);
  if (last === undefined) return { data, nextCursor: null };
  return { data, nextCursor: params.cursorOf === undefined ? encodeCursor(params.keyOf(last)) : params.cursorOf(last) };
}

async function readCursor<row, key>(cursor: string, reader: CursorOf<row, key>): Promise<key> {
  if (reader.resolveCursor === undefined) return decodeCursor(cursor, reader.key) as key;
  if (cursor.length > MAX_CURSOR_LENGTH) throw invalidCursor();
  const key = await reader.resolveCursor(cursor);
  if (key === undefined) throw invalidCursor();
  return key;
}
