import { type Kysely, type RawBuilder, SqliteAdapter, sql } from "kysely";

/**
 * A neighbour's row carried as JSON inside one query about another record (a session with
 * its order, payment and relay in one round trip): subqueries, one per neighbour, instead of
 * one query each. SQLite spells the JSON functions `json_object`/`json_group_array`, Postgres
 * `json_build_object`/`json_agg`; the columns are named here, so both answer the same keys.
 */

/**
 * The columns of a row type, every one of them: a list that misses one does not compile, so a
 * row read as JSON is the whole row its owner's converter expects.
 */
export function everyColumn<Row>() {
  return <const Columns extends readonly (keyof Row & string)[]>(
    columns: Columns &
      (Exclude<keyof Row, Columns[number]> extends never ? unknown : { missing: Exclude<keyof Row, Columns[number]> }),
  ): Columns => columns;
}

const isSqlite = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof SqliteAdapter;

/** One row of `alias` as a JSON object of `columns` (for a scalar subquery). */
export function rowAsJson(db: Kysely<unknown>, alias: string, columns: readonly string[]): RawBuilder<unknown> {
  const pairs = sql.join(columns.flatMap((column) => [sql.lit(column), sql.ref(`${alias}.${column}`)]));
  return isSqlite(db) ? sql`json_object(${pairs})` : sql`json_build_object(${pairs})`;
}

/** Every row of `alias` as a JSON array of objects of `columns` (an aggregate subquery; `[]` when none). */
export function rowsAsJson(db: Kysely<unknown>, alias: string, columns: readonly string[]): RawBuilder<unknown> {
  const row = rowAsJson(db, alias, columns);
  return isSqlite(db) ? sql`json_group_array(${row})` : sql`coalesce(json_agg(${row}), '[]'::json)`;
}

/**
 * A JSON column as the driver gave it: SQLite answers text, Postgres (and PGlite) a parsed
 * value. Null (no row) is undefined.
 */
export function fromJson<Value>(value: unknown): Value | undefined {
  if (value === null || value === undefined) return undefined;
  return (typeof value === "string" ? JSON.parse(value) : value) as Value;
}
