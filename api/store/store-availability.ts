import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SqliteDialect,
  type SqliteDialectConfig,
  type TransactionSettings,
} from "kysely";

/**
 * A store that cannot answer in bounded time: SQLite locked by another process
 * for longer than {@link STORE_LOCK_WAIT_MS}, or Postgres refusing connections,
 * timing out a statement or a lock. Routes answer it as `503 store_unavailable`.
 */
export class StoreUnavailableError extends Error {
  override name = "StoreUnavailableError";
}

/**
 * How long one SQLite statement waits for another process' write lock, in total.
 * better-sqlite3 is synchronous: its own busy timeout blocks the whole process
 * (HTTP, Ponder's /ready, the indexer) while it waits, so it stays at
 * {@link SQLITE_BUSY_SLICE_MS} and the rest of the wait is asynchronous.
 */
export const STORE_LOCK_WAIT_MS = 2_000;
/** The synchronous part of one attempt (SQLite's `busy_timeout`). */
export const SQLITE_BUSY_SLICE_MS = 10;

/** Postgres bounds, in the pool's connection settings. */
export const POSTGRES_TIMEOUTS = {
  /** Waiting for a pooled connection (or a new one) before giving up. */
  connectionTimeoutMillis: 5_000,
  /** A statement running longer is cancelled (57014). */
  statement_timeout: 30_000,
  /** Waiting for a row or table lock longer is an error (55P03). */
  lock_timeout: 5_000,
} as const;

/** Whether the store's writes currently fail for lack of a lock or a connection. */
export type StoreAvailability = {
  /** False while the most recent write (or any statement) failed as unavailable and no write succeeded since. */
  writable: () => boolean;
  lastFailure: () => { at: number; message: string } | undefined;
  recordFailure: (error: unknown) => void;
  recordWrite: () => void;
};

export function createStoreAvailability(): StoreAvailability {
  let lastWriteAt = 0;
  let failure: { at: number; message: string } | undefined;
  return {
    writable: () => failure === undefined || failure.at < lastWriteAt,
    lastFailure: () => failure,
    recordFailure(error) {
      failure = { at: Date.now(), message: error instanceof Error ? error.message : String(error) };
    },
    recordWrite() {
      lastWriteAt = Date.now();
    },
  };
}

/** The availability of this process' store (one store per process). */
export const storeAvailability = createStoreAvailability();

const POSTGRES_UNAVAILABLE = new Set(["57014", "55P03", "53300", "57P01", "57P02", "57P03", "08000", "08001", "08003", "08006"]);
const NODE_UNAVAILABLE = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"]);

/** A store error that says "try again later" rather than "this request is wrong". */
export function isStoreUnavailable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof StoreUnavailableError) return true;
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && (POSTGRES_UNAVAILABLE.has(code) || NODE_UNAVAILABLE.has(code))) return true;
    if (typeof code === "string" && code.startsWith("SQLITE_BUSY")) return true;
    if (/timeout exceeded when trying to connect|Connection terminated/i.test(cause.message)) return true;
  }
  return false;
}

/**
 * SQLITE_BUSY and its extended codes: `SQLITE_BUSY_RECOVERY` (another connection is
 * recovering the WAL, as right after a writer was killed), `SQLITE_BUSY_SNAPSHOT`,
 * `SQLITE_BUSY_TIMEOUT`. Each means another process holds the store for now.
 */
const isSqliteBusy = (error: unknown) =>
  typeof (error as { code?: unknown })?.code === "string" && (error as { code: string }).code.startsWith("SQLITE_BUSY");

/**
 * Kysely's SQLite dialect with every statement's wait for a lock made
 * asynchronous and bounded: an attempt blocks at most {@link SQLITE_BUSY_SLICE_MS},
 * then the statement is tried again after a pause that lets the event loop run,
 * until {@link STORE_LOCK_WAIT_MS} have passed: then {@link StoreUnavailableError}.
 */
export class BoundedSqliteDialect extends SqliteDialect {
  readonly #availability: StoreAvailability;
  readonly #lockWaitMs: number;

  constructor(config: SqliteDialectConfig & { availability?: StoreAvailability; lockWaitMs?: number }) {
    super(config);
    this.#availability = config.availability ?? storeAvailability;
    this.#lockWaitMs = config.lockWaitMs ?? STORE_LOCK_WAIT_MS;
  }

  override createDriver(): Driver {
    return new BoundedDriver(super.createDriver(), this.#availability, this.#lockWaitMs);
  }
}

class BoundedDriver implements Driver {
  readonly #inner: Driver;
  readonly #availability: StoreAvailability;
  readonly #lockWaitMs: number;
  #connection: { inner: DatabaseConnection; bounded: DatabaseConnection } | undefined;

  constructor(inner: Driver, availability: StoreAvailability, lockWaitMs: number) {
    this.#inner = inner;
    this.#availability = availability;
    this.#lockWaitMs = lockWaitMs;
  }

  init() {
    return this.#inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await this.#inner.acquireConnection();
    if (this.#connection?.inner !== inner) this.#connection = { inner, bounded: this.#bound(inner) };
    return this.#connection.bounded;
  }

  #bound(inner: DatabaseConnection): DatabaseConnection {
    const availability = this.#availability;
    const lockWaitMs = this.#lockWaitMs;
    return {
      async executeQuery<row>(compiledQuery: CompiledQuery): Promise<QueryResult<row>> {
        const deadline = Date.now() + lockWaitMs;
        for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
          try {
            const result = await inner.executeQuery<row>(compiledQuery);
            if (compiledQuery.query.kind !== "SelectQueryNode") availability.recordWrite();
            return result;
          } catch (error) {
            if (!isSqliteBusy(error)) {
              if (isStoreUnavailable(error)) availability.recordFailure(error);
              throw error;
            }
            if (Date.now() >= deadline) {
              const unavailable = new StoreUnavailableError(`The store stayed locked by another process for ${lockWaitMs} ms`, {
                cause: error,
              });
              availability.recordFailure(unavailable);
              throw unavailable;
            }
            await new Promise((resolve) => setTimeout(resolve, pause));
          }
        }
      },
      streamQuery: (compiledQuery, chunkSize) => inner.streamQuery(compiledQuery, chunkSize),
    };
  }

  /**
   * `BEGIN IMMEDIATE`, not SQLite's default deferred `BEGIN`: a deferred
   * transaction that reads, then writes after another process committed, fails
   * with `SQLITE_BUSY_SNAPSHOT`, which no retry of the statement can cure (its
   * snapshot stays stale until the whole transaction starts again). Taking the
   * write lock at `BEGIN` makes the wait happen there, where the bounded retry
   * above waits it out. The settings (isolation level) have no meaning for SQLite.
   */
  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings) {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
  commitTransaction(connection: DatabaseConnection) {
    return this.#inner.commitTransaction(connection);
  }
  rollbackTransaction(connection: DatabaseConnection) {
    return this.#inner.rollbackTransaction(connection);
  }
  savepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver["savepoint"]>>[2]) {
    return this.#inner.savepoint?.(connection, name, compile) ?? Promise.reject(new Error("savepoints are not supported"));
  }
  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver["savepoint"]>>[2]) {
    return (
      this.#inner.rollbackToSavepoint?.(connection, name, compile) ?? Promise.reject(new Error("savepoints are not supported"))
    );
  }
  releaseSavepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver["savepoint"]>>[2]) {
    return this.#inner.releaseSavepoint?.(connection, name, compile) ?? Promise.reject(new Error("savepoints are not supported"));
  }
  releaseConnection() {
    return this.#inner.releaseConnection(this.#connection?.inner as DatabaseConnection);
  }
  destroy() {
    return this.#inner.destroy();
  }
}
